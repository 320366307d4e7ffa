package api

import (
	_ "embed"
	"net/http"
)

// openAPIDocument is the description of this API (OpenAPI 3.1), built
// from openapi.yaml and the plugin protocol's schema by `go generate`,
// which also writes docs/api.md's route table from it.
//
//go:generate go test -run ^TestOpenAPIBuilt$ . -update
//go:generate go test -run ^TestAPIDocRoutes$ . -update
//go:embed openapi.json
var openAPIDocument []byte

// serveOpenAPI answers GET /v1/openapi.json without a token: the
// description holds no secret (SPEC §10 lists it beside the probes).
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(openAPIDocument)
}
