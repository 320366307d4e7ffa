package openapi

import "github.com/blindexec/blindexec/plugins"

// titled gives p, converted from an operation without a summary, a title:
// its description's first sentence (plain text already: plugins.PlainText),
// else its key, method and path.
func titled(p *plugins.Plugin, key string) {
	if p.Title == "" {
		p.Title = plugins.TitleFrom(p.Description)
	}
	if p.Title == "" {
		p.Title = key
	}
}
