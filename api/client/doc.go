// Package client is a Go client of the engine's HTTP API, generated from
// its description (../openapi.json) by oapi-codegen. oapi-codegen reads
// OpenAPI 3.0, so it reads openapi30.json, the description rendered in
// 3.0 by TestOpenAPI30Rendered; `go generate` renders it and generates
// client.gen.go again, and TestClientGenerated fails when either differs
// from what is committed.
package client

//go:generate go test -run ^TestOpenAPI30Rendered$ . -update
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml openapi30.json
