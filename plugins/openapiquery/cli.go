package openapiquery

import "context"

// The command line of seed 000 §9 (blindexec openapi fetch|index|search|
// schema request|schema response) prints the values below, or those of
// Index.SearchOperations, RequestSchema and ResponseSchema after
// Cache.Get, as JSON; on failure it prints ErrorObject(err).

// DocumentSummary is what `openapi fetch` prints: how the document was
// obtained and what it holds.
type DocumentSummary struct {
	FetchInfo
	Title          string   `json:"title"`
	Version        string   `json:"version"`
	OpenAPIVersion string   `json:"openapiVersion"`
	Operations     int      `json:"operations"`
	Schemas        int      `json:"schemas"`
	Warnings       []string `json:"warnings,omitempty"`
}

// IndexDump is what `openapi index` writes: the summary, every operation
// and every schema name.
type IndexDump struct {
	DocumentSummary
	OperationList []OperationSummary `json:"operationList"`
	SchemaNames   []string           `json:"schemaNames"`
}

// Fetch fetches the document at location and summarizes it.
func Fetch(ctx context.Context, c *Cache, location string) (*DocumentSummary, error) {
	idx, info, err := c.Get(ctx, location)
	if err != nil {
		return nil, err
	}
	return idx.summary(info), nil
}

// Dump fetches the document at location and lists its index.
func Dump(ctx context.Context, c *Cache, location string) (*IndexDump, error) {
	idx, info, err := c.Get(ctx, location)
	if err != nil {
		return nil, err
	}
	ops, err := idx.SearchOperations(Query{Match: AllFields}, len(idx.ops))
	if err != nil {
		return nil, err
	}
	return &IndexDump{DocumentSummary: *idx.summary(info), OperationList: ops, SchemaNames: nonNil(idx.schemas)}, nil
}

func (x *Index) summary(info FetchInfo) *DocumentSummary {
	a := x.Info()
	return &DocumentSummary{FetchInfo: info, Title: a.Title, Version: a.Version, OpenAPIVersion: a.OpenAPIVersion,
		Operations: len(x.ops), Schemas: len(x.schemas), Warnings: x.Doc.Warnings}
}

// ErrorObject is the error object (seed 000 §6.1) for any error of this
// package: what the tools answer, and what the command line prints.
func ErrorObject(err error) *Error { return asError(err) }
