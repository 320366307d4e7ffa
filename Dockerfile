FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /blindexec ./cmd/blindexec

FROM alpine:3.20
RUN adduser -D -u 10001 blindexec && install -d -o blindexec -m 700 /home/blindexec/spool
COPY --from=build /blindexec /usr/local/bin/blindexec
USER blindexec
WORKDIR /home/blindexec
EXPOSE 8080
ENTRYPOINT ["blindexec"]
