package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/plugins"
)

// maxName is the longest plugin name (OpenAI's function-name rule).
const maxName = 64

// assignNames names every plugin: the sanitized operationId, else method
// and path; with the prefix; within 64 characters. A name cut to fit, or
// taken by an earlier operation, ends in "_" and six hex digits of the
// hash of the operation's key, so names do not depend on the order of
// later operations. A reserved name (search_tools, call_tool) is renamed
// the same way.
func assignNames(ops []Operation, ids []string, prefix string) {
	prefix = sanitize(prefix, "")
	if prefix != "" && !strings.HasSuffix(prefix, "_") && !strings.HasSuffix(prefix, "-") {
		prefix += "_"
	}
	taken := make(map[string]bool, len(ops))
	for i := range ops {
		op := &ops[i]
		base := sanitize(ids[i], "")
		if base == "" {
			base = methodPath(op.Key)
		}
		name := prefix + base
		if len(name) > maxName {
			name = withHash(name, op.Key, "")
		}
		for n := 0; taken[name] || plugins.Reserved(name); n++ {
			salt := ""
			if n > 0 {
				salt = strconv.Itoa(n)
			}
			name = withHash(prefix+base, op.Key, salt)
		}
		taken[name] = true
		op.Plugin.Name = name
	}
}

// withHash cuts name so that "_" and six hex digits of key's (salted) hash
// fit within maxName, and appends them.
func withHash(name, key, salt string) string {
	sum := sha256.Sum256([]byte(key + salt))
	suffix := "_" + hex.EncodeToString(sum[:3])
	if len(name) > maxName-len(suffix) {
		name = strings.TrimRight(name[:maxName-len(suffix)], "_-")
	}
	return name + suffix
}

// methodPath names an operation without operationId: get_v1_customers_id.
func methodPath(key string) string {
	method, p, _ := strings.Cut(key, " ")
	return sanitize(strings.ToLower(method)+"_"+p, "")
}

// sanitize keeps letters, digits, "_" and "-" (and extra), turns every run of
// anything else into one "_" and trims "_" at both ends.
func sanitize(s, extra string) string {
	var b strings.Builder
	b.Grow(len(s))
	gap := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isNameChar(c) || strings.IndexByte(extra, c) >= 0 {
			if gap && b.Len() > 0 && c != '_' && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			gap = false
			b.WriteByte(c)
			continue
		}
		gap = true
	}
	return strings.Trim(b.String(), "_")
}

func isNameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// argName is an argument name within the property-name rule of function
// calling APIs (letters, digits, "_", "-", "."; at most 64); the wire name
// is kept in param_placement when it differs.
func argName(s string) string {
	n := sanitize(s, ".")
	if n == "" {
		n = "arg"
	}
	if len(n) > maxName {
		n = withHash(n, s, "")
	}
	return n
}

// upperSnake is the credential-key form of a name: "Stripe API" → STRIPE_API.
func upperSnake(s string) string {
	return strings.ToUpper(sanitize(strings.ReplaceAll(s, "-", "_"), ""))
}
