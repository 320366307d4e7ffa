package openapi

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"

	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/plugins"
)

// maxName is the longest plugin name (OpenAI's function-name rule).
const maxName = 64

// assignNames names every plugin: the sanitized operationId, else (or
// when the operationId is machine-made, see readableID) method and path;
// with the prefix; within 64 characters. A name cut to fit, or
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
		// Removed, not turned into "_": get\u200bUser is getUser.
		id, found := invisible.Remove(ids[i])
		if found.Count > 0 {
			op.Plugin.InvisibleRemoved = append([]invisible.Removal{{Field: "name", Count: found.Count, Kinds: found.Kinds}}, op.Plugin.InvisibleRemoved...)
		}
		base := sanitize(readableID(id, op.Key), "")
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

// Machine-made operationIds: springdoc numbers a repeated method name
// (list_5, add_3); NestJS joins controller and method (AppController_findAll).
var (
	numberedID   = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*_[0-9]+$`)
	controllerID = regexp.MustCompile(`^[A-Za-z0-9]+Controller_[A-Za-z0-9]+$`)
	nonWord      = regexp.MustCompile(`[^A-Za-z0-9_]`)
)

// readableID is the operationId to name an operation by: "" (method and
// path) for a machine-made one that says nothing an LLM can tell apart,
// the function name of FastAPI's generated ids (list_items_items_get is
// list_items + the path + the method), else the operationId itself.
func readableID(id, key string) string {
	if numberedID.MatchString(id) || controllerID.MatchString(id) {
		return ""
	}
	method, p, _ := strings.Cut(key, " ")
	// FastAPI: re.sub(r"\W", "_", name + path) + "_" + method.
	suffix := nonWord.ReplaceAllString(p, "_") + "_" + strings.ToLower(method)
	if fn, ok := strings.CutSuffix(id, suffix); ok && sanitize(fn, "") != "" {
		return fn
	}
	return id
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

// argName is argName(s), once for each name: the operations sending one
// body share its names.
func (c *converter) argName(s string) string {
	if n, ok := c.argNames[s]; ok {
		return n
	}
	if c.argNames == nil {
		c.argNames = map[string]string{}
	}
	n := argName(s)
	c.argNames[s] = n
	return n
}

// upperSnake is the credential-key form of a name: "Stripe API" → STRIPE_API.
func upperSnake(s string) string {
	return strings.ToUpper(sanitize(strings.ReplaceAll(s, "-", "_"), ""))
}
