// Package csp holds the Content-Security-Policy of every page the engine
// serves to a browser (the console, the OAuth flow's pages): one rule,
// in one place.
package csp

import "net/http"

// ReportPath receives the policy's violation reports (the console serves
// it).
const ReportPath = "/console/csp-report"

// Policy allows scripts, styles and connections of this origin only, no
// inline script or handler, no plugins, no framing, forms posted to this
// origin only; violations are reported to ReportPath.
const Policy = "default-src 'none'; script-src 'self' 'report-sample'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; report-uri " + ReportPath

// SetHeaders sets the policy, and nosniff, on a page's answer.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", Policy)
	h.Set("X-Content-Type-Options", "nosniff")
}
