// Command springdoc writes the OpenAPI document springdoc would serve for
// a tree of Spring MVC controllers, from their source: each
// @RestController's mappings, @Operation summary and description, @Tag,
// @Parameter, request parameters, and the @Schema fields of the request
// VOs (as query parameters, or as the body of a @RequestBody). It also reads
// the Swagger 2 annotations older projects keep (macrozheng/mall):
// @ApiOperation, @ApiModelProperty, @RequestMapping(method = ...) and a
// @Controller whose methods are @ResponseBody. It reads
// the subset of Java the controllers use, not Java; it builds test
// catalogs for tool search (toolsearch/testdata/README.md).
//
//	go run ./toolsearch/searcheval/internal/springdoc -title T DIR > out.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

func main() {
	title := flag.String("title", "API", "the document's info.title")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: springdoc [-title T] DIR")
		os.Exit(2)
	}
	doc, err := generate(os.DirFS(flag.Arg(0)), *title)
	if err != nil {
		fmt.Fprintln(os.Stderr, "springdoc:", err)
		os.Exit(1)
	}
	out, _ := json.MarshalIndent(doc, "", " ")
	os.Stdout.Write(append(out, '\n'))
}

// field is a VO's field as its @Schema describes it.
type field struct {
	name, typ, description string
	required               bool
}

// vo is a request class: its fields and the class it extends.
type vo struct {
	fields  []field
	extends string
}

var (
	classRe     = regexp.MustCompile(`public\s+(?:abstract\s+)?class\s+(\w+)(?:<[^>]*>)?(?:\s+extends\s+(\w+))?`)
	attrRe      = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)
	fieldRe     = regexp.MustCompile(`^\s*private\s+([\w<>, \[\]]+?)\s+(\w+)\s*(?:=.*)?;`)
	mappingRe   = regexp.MustCompile(`^\s*@(Get|Post|Put|Delete|Patch|Request)Mapping(?:\((?:value\s*=\s*)?"([^"]*)"[^)]*\))?`)
	methodRe    = regexp.MustCompile(`method\s*=\s*RequestMethod\.(\w+)`)
	operationRe = regexp.MustCompile(`^\s*@Operation\((.*)\)`)
	apiOpRe     = regexp.MustCompile(`^\s*@ApiOperation\((.*)\)`)
	parameterRe = regexp.MustCompile(`@Parameter\(([^)]*)\)`)
	tagRe       = regexp.MustCompile(`^@Tag\((.*)\)`)
	requiredRe  = regexp.MustCompile(`required\s*=\s*false`)
	signatureRe = regexp.MustCompile(`^\s*public\s+[\w<>, ?\[\]]+\s+(\w+)\s*\(`)
)

// closing is the index in s of the parenthesis that closes one opened
// before s (len(s) if none).
func closing(s string) int {
	depth := 1
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return i
			}
		}
	}
	return len(s)
}

func attrs(s string) map[string]string {
	m := map[string]string{}
	for _, a := range attrRe.FindAllStringSubmatch(s, -1) {
		m[a[1]] = a[2]
	}
	return m
}

// parseVO reads the @Schema fields of a class's source.
func parseVO(src string) (name string, v vo) {
	m := classRe.FindStringSubmatch(src)
	if m == nil {
		return "", v
	}
	name, v.extends = m[1], m[2]
	var pending string // the annotations above a field
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if f := fieldRe.FindStringSubmatch(line); f != nil && !strings.Contains(line, " static ") {
			if i := strings.Index(pending, "@Schema("); i >= 0 {
				s := pending[i+len("@Schema("):]
				a := attrs(s[:closing(s)])
				v.fields = append(v.fields, field{f[2], f[1], a["description"], strings.Contains(s[:closing(s)], "REQUIRED")})
			} else if i := strings.Index(pending, "@ApiModelProperty("); i >= 0 {
				s := pending[i+len("@ApiModelProperty("):]
				s = s[:closing(s)]
				v.fields = append(v.fields, field{f[2], f[1], swaggerValue(s), strings.Contains(s, "required = true")})
			}
			pending = ""
			continue
		}
		switch {
		case strings.HasPrefix(t, "@"), strings.Count(pending, "(") > strings.Count(pending, ")"):
			pending += " " + t
		case t == "" || strings.HasPrefix(t, "//") || strings.HasPrefix(t, "*") || strings.HasPrefix(t, "/*"):
		default:
			pending = ""
		}
	}
	return name, v
}

// schemaOf is the JSON Schema of a Java type.
func schemaOf(typ string) map[string]any {
	typ = strings.TrimSpace(typ)
	switch {
	case strings.HasSuffix(typ, "[]"):
		return map[string]any{"type": "array", "items": schemaOf(strings.TrimSuffix(typ, "[]"))}
	case strings.HasPrefix(typ, "List<"), strings.HasPrefix(typ, "Set<"), strings.HasPrefix(typ, "Collection<"):
		inner := typ[strings.Index(typ, "<")+1 : len(typ)-1]
		return map[string]any{"type": "array", "items": schemaOf(inner)}
	}
	switch typ {
	case "String":
		return map[string]any{"type": "string"}
	case "Long", "long":
		return map[string]any{"type": "integer", "format": "int64"}
	case "Integer", "int":
		return map[string]any{"type": "integer", "format": "int32"}
	case "Boolean", "boolean":
		return map[string]any{"type": "boolean"}
	case "BigDecimal", "Double", "double", "Float":
		return map[string]any{"type": "number"}
	case "LocalDateTime", "LocalDate", "Date":
		return map[string]any{"type": "string", "format": "date-time"}
	}
	return map[string]any{"type": "object"}
}

// pageParam is yudao's PageParam, which paged request VOs extend.
var pageParam = []field{
	{"pageNo", "Integer", "页码，从 1 开始", true},
	{"pageSize", "Integer", "每页条数，最大值为 100", true},
}

// fieldsOf are the fields of VO name, those of the classes it extends first.
func fieldsOf(vos map[string]vo, name string) []field {
	v, ok := vos[name]
	if !ok {
		return nil
	}
	var out []field
	switch {
	case v.extends == "PageParam":
		out = append(out, pageParam...)
	case v.extends != "":
		out = append(out, fieldsOf(vos, v.extends)...)
	}
	return append(out, v.fields...)
}

// operation is one mapped method of a controller.
type operation struct {
	method, path, id, summary, description, tag, tagDescription string
	params                                                      []map[string]any
	body                                                        map[string]any
}

// swaggerValue is the text of an @ApiOperation or @ApiModelProperty:
// its value attribute, or its one quoted argument.
func swaggerValue(args string) string {
	if v, ok := attrs(args)["value"]; ok {
		return v
	}
	if q := quotedRe.FindStringSubmatch(args); q != nil {
		return q[1]
	}
	return ""
}

// isController: a @RestController, or a @Controller whose methods answer
// with @ResponseBody.
func isController(src string) bool {
	return strings.Contains(src, "@RestController") ||
		strings.Contains(src, "@Controller") && strings.Contains(src, "@ResponseBody")
}

// parseController reads the operations of a @RestController's source.
func parseController(src string, vos map[string]vo) []operation {
	lines := strings.Split(src, "\n")
	base, tag, tagDesc := "", "", ""
	var ops []operation
	var cur *operation
	paramDocs := map[string]string{}
	inClass := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		t := strings.TrimSpace(line)
		if !inClass {
			if m := mappingRe.FindStringSubmatch(t); m != nil && m[1] == "Request" {
				base = m[2]
			}
			if m := tagRe.FindStringSubmatch(t); m != nil {
				a := attrs(m[1])
				tag, tagDesc = a["name"], a["description"]
			}
			inClass = classRe.MatchString(t)
			continue
		}
		if m := mappingRe.FindStringSubmatch(line); m != nil {
			method := strings.ToLower(m[1])
			if method == "request" {
				mm := methodRe.FindStringSubmatch(line)
				if mm == nil {
					continue // any method: springdoc lists each; none here does
				}
				method = strings.ToLower(mm[1])
			}
			summary, description := "", ""
			if cur != nil { // an @ApiOperation above the mapping
				summary, description = cur.summary, cur.description
			}
			cur = &operation{method: method, path: base + m[2], tag: tag, tagDescription: tagDesc, summary: summary, description: description}
			paramDocs = map[string]string{}
			continue
		}
		if m := apiOpRe.FindStringSubmatch(line); m != nil {
			if cur == nil {
				cur = &operation{}
			}
			cur.summary, cur.description = swaggerValue(m[1]), attrs(m[1])["notes"]
			continue
		}
		if cur == nil {
			continue
		}
		if m := operationRe.FindStringSubmatch(line); m != nil {
			a := attrs(m[1])
			cur.summary, cur.description = a["summary"], a["description"]
		}
		for _, m := range parameterRe.FindAllStringSubmatch(line, -1) {
			a := attrs(m[1])
			paramDocs[a["name"]] = a["description"]
		}
		m := signatureRe.FindStringSubmatch(line)
		if m == nil || cur.method == "" {
			continue
		}
		cur.id = m[1]
		sig := line
		for !strings.Contains(sig, "{") && i+1 < len(lines) {
			i++
			sig += " " + strings.TrimSpace(lines[i])
		}
		sig = sig[strings.Index(sig, "(")+1 : strings.LastIndex(sig, ")")]
		for _, p := range splitParams(sig) {
			cur.addParam(p, paramDocs, vos)
		}
		ops = append(ops, *cur)
		cur = nil
	}
	return ops
}

// splitParams cuts a parameter list at its top-level commas.
func splitParams(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(', '<':
			depth++
		case ')', '>':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

var (
	annotationRe = regexp.MustCompile(`@(\w+)(?:\(([^)]*)\))?\s*`)
	quotedRe     = regexp.MustCompile(`"([^"]*)"`)
)

// addParam adds a Java parameter ("@RequestParam("id") Long id",
// "@Valid @RequestBody FooReqVO reqVO", "FooPageReqVO pageVO") to op.
func (op *operation) addParam(p string, docs map[string]string, vos map[string]vo) {
	annots := annotationRe.FindAllStringSubmatch(p, -1)
	rest := strings.Fields(annotationRe.ReplaceAllString(p, ""))
	if len(rest) < 2 {
		return
	}
	typ, name := strings.Join(rest[:len(rest)-1], " "), rest[len(rest)-1]
	in, required := "query", true
	for _, a := range annots {
		switch a[1] {
		case "RequestBody":
			if item := strings.TrimSuffix(strings.TrimPrefix(typ, "List<"), ">"); item != typ {
				op.body = map[string]any{"type": "array", "items": objectSchema(fieldsOf(vos, item))}
				return
			}
			op.body = objectSchema(fieldsOf(vos, typ))
			return
		case "RequestParam", "PathVariable":
			if q := quotedRe.FindStringSubmatch(a[2]); q != nil {
				name = q[1]
			}
			required = !requiredRe.MatchString(a[2])
			if a[1] == "PathVariable" {
				in = "path"
			}
		}
	}
	if _, ok := vos[typ]; ok {
		for _, f := range fieldsOf(vos, typ) {
			op.params = append(op.params, parameter(f.name, "query", f.description, f.required, f.typ))
		}
		return
	}
	if strings.HasPrefix(typ, "Http") { // HttpServletResponse and the like
		return
	}
	op.params = append(op.params, parameter(name, in, docs[name], required, typ))
}

func parameter(name, in, desc string, required bool, typ string) map[string]any {
	p := map[string]any{"name": name, "in": in, "required": required, "schema": schemaOf(typ)}
	if desc != "" {
		p["description"] = desc
	}
	return p
}

func objectSchema(fields []field) map[string]any {
	props := map[string]any{}
	var required []string
	for _, f := range fields {
		s := schemaOf(f.typ)
		if f.description != "" {
			s["description"] = f.description
		}
		props[f.name] = s
		if f.required {
			required = append(required, f.name)
		}
	}
	s := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// generate reads every .java file of fsys: first the VOs, then the
// controllers.
func generate(fsys fs.FS, title string) (map[string]any, error) {
	srcs := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".java" {
			return err
		}
		b, err := fs.ReadFile(fsys, path)
		srcs[path] = string(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(srcs))
	for p := range srcs {
		names = append(names, p)
	}
	sort.Strings(names)
	vos := map[string]vo{}
	for _, p := range names {
		if name, v := parseVO(srcs[p]); name != "" && !isController(srcs[p]) {
			vos[name] = v
		}
	}
	paths := map[string]map[string]any{}
	var tags []string
	tagDescs := map[string]string{}
	ids := map[string]int{}
	for _, p := range names {
		if !isController(srcs[p]) {
			continue
		}
		for _, op := range parseController(srcs[p], vos) {
			// springdoc makes overloaded methods' ids unique: getList, getList_1
			id := op.id
			if n := ids[op.id]; n > 0 {
				id = fmt.Sprintf("%s_%d", op.id, n)
			}
			ids[op.id]++
			if op.tagDescription != "" {
				tagDescs[op.tag] = op.tagDescription
			}
			o := map[string]any{
				"operationId": id,
				"summary":     op.summary,
				"responses":   map[string]any{"200": map[string]any{"description": "OK"}},
			}
			if op.tag != "" {
				o["tags"] = []string{op.tag}
				if !containsString(tags, op.tag) {
					tags = append(tags, op.tag)
				}
			}
			if op.description != "" {
				o["description"] = op.description
			}
			if len(op.params) > 0 {
				o["parameters"] = op.params
			}
			if op.body != nil {
				o["requestBody"] = map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": op.body}}}
			}
			if paths[op.path] == nil {
				paths[op.path] = map[string]any{}
			}
			if _, dup := paths[op.path][op.method]; dup {
				return nil, fmt.Errorf("%s: %s %s mapped twice", p, op.method, op.path)
			}
			paths[op.path][op.method] = o
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no @RestController mapping found")
	}
	tagList := make([]map[string]string, len(tags))
	for i, t := range tags {
		tagList[i] = map[string]string{"name": t}
		if d := tagDescs[t]; d != "" {
			tagList[i]["description"] = d
		}
	}
	return map[string]any{
		"openapi": "3.0.1",
		"info":    map[string]any{"title": title, "version": "1.0.0"},
		"servers": []map[string]string{{"url": "http://localhost:48080/admin-api"}},
		"tags":    tagList,
		"paths":   paths,
	}, nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
