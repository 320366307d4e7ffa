# Base images are pinned to exact version tags; a release pins them by
# digest too (see docs/operations.md, "Container image"). The Go version is
# go.mod's (tests/image checks that they agree).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the build context (.dockerignore): a release passes the
# version and commit that `blindexec --version` prints.
ARG VERSION=devel
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /blindexec ./cmd/blindexec

FROM alpine:3.22.1
RUN adduser -D -u 10001 blindexec && mkdir /data && chown blindexec /data && \
    install -d -o blindexec -m 700 /home/blindexec/spool
COPY --from=build /blindexec /usr/local/bin/blindexec
USER blindexec
WORKDIR /data
# Inside a container the engine listens on every interface (its default,
# 127.0.0.1, would be unreachable through a published port), and the
# embedded database lives in the /data volume.
ENV BLINDEXEC_ADDR=0.0.0.0:8080 \
    BLINDEXEC_DB=sqlite:/data/blindexec.db
VOLUME /data
EXPOSE 8080
# Ready means the database is reachable and migrated.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD wget -qO- http://127.0.0.1:8080/readyz >/dev/null || exit 1
ENTRYPOINT ["blindexec"]
CMD ["serve"]
