package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/internal/language"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/store"
)

// The administrators' log in words (issue 51 point 4). Every change — from
// the API, the console, the command line, a person's decision or a user's
// connection — is one row of sys_ai_admin_log whose detail says what was
// done (an op) to which object, with the values that are not secret (its
// args); GET /v1/audit reads the rows as sentences in the reader's
// language. DescribeChange makes the detail of an API request; the
// command line and the connection flow make theirs with the ops below.

// The ops of the log: each is a sentence of auditWords.
const (
	OpPluginAdded        = "plugin.added"
	OpPluginReplaced     = "plugin.replaced"
	OpPluginEnabled      = "plugin.enabled"
	OpPluginDisabled     = "plugin.disabled"
	OpPluginDeleted      = "plugin.deleted"
	OpPluginsClassified  = "plugins.classified"
	OpPluginsPerms       = "plugins.perms"
	OpImportOpenAPI      = "import.openapi"
	OpImportMCP          = "import.mcp"
	OpCredentialSet      = "credential.set"
	OpCredentialDeleted  = "credential.deleted"
	OpCredentialsRotated = "credentials.rotated"
	OpTokenCreated       = "token.created"
	OpTokenRevoked       = "token.revoked"
	OpMCPServerAdded     = "mcp_server.added"
	OpMCPServerDeleted   = "mcp_server.deleted"
	OpQuotaRuleAdded     = "quota_rule.added"
	OpQuotaRuleDeleted   = "quota_rule.deleted"
	OpProviderSaved      = "provider.saved"
	OpProviderDeleted    = "provider.deleted"
	OpConnectionAdded    = connections.OpConnected
	OpConnectionDeleted  = "connection.deleted"
	OpAgentAdded         = "agent.added"
	OpAgentReplaced      = "agent.replaced"
	OpAgentDeleted       = "agent.deleted"
	OpSignIn             = "session.signin"
	OpSignOut            = "session.signout"
	// OpDecided is a person's decision on a waiting call; its args say
	// the outcome (approved, denied, continued, cancelled).
	OpDecided = "call.decided"
	// OpAnswered is a person's answer to an MCP server's question, by
	// whichever route, recorded as the call takes it (engine/questions);
	// its args say the action (accept, decline, cancel) and the route,
	// never the content.
	OpAnswered = questions.OpAnswered
)

// Languages of the log's sentences (and of every page the engine serves).
const (
	LangEN = "en"
	LangZH = "zh-CN"
)

// auditWords are the sentences of the ops, by language. {arg} is an
// argument; a [bracketed part] is left out unless every argument in it
// has a value. An argument listed in auditValues is said in words.
var auditWords = map[string][2]string{
	OpPluginAdded:        {"plugin “{name}” added", "插件“{name}”已添加"},
	OpPluginReplaced:     {"plugin “{name}” replaced", "插件“{name}”已替换"},
	OpPluginEnabled:      {"plugin “{name}” enabled", "插件“{name}”已启用"},
	OpPluginDisabled:     {"plugin “{name}” disabled", "插件“{name}”已停用"},
	OpPluginDeleted:      {"plugin “{name}” deleted", "插件“{name}”已删除"},
	OpPluginsClassified:  {"{plugins} marked {consequential}", "{plugins}已标记为{consequential}"},
	OpPluginsPerms:       {"{plugins} need the permissions {perms}", "{plugins}所需权限设为 {perms}"},
	OpImportOpenAPI:      {"OpenAPI document {source} imported[ with the name prefix “{prefix}”]", "已导入 OpenAPI 文档 {source}[（名称前缀“{prefix}”）]"},
	OpImportMCP:          {"tools of the MCP server “{server}” imported", "已导入 MCP 服务“{server}”的工具"},
	OpCredentialSet:      {"credential “{key}” of user {user} set[ ({empty})]", "用户 {user} 的凭据“{key}”已设置[（{empty}）]"},
	OpCredentialDeleted:  {"credential “{key}” of user {user} deleted", "用户 {user} 的凭据“{key}”已删除"},
	OpCredentialsRotated: {"every credential re-encrypted under the newest master key", "全部凭据已用最新主密钥重新加密"},
	OpTokenCreated:       {"token #{id} created for user {user}[ “{name}”][, {scope}][, permissions {perms}][, valid {expires}]", "已为用户 {user} 创建令牌 #{id}[“{name}”][，{scope}][，权限 {perms}][，有效期 {expires}]"},
	OpTokenRevoked:       {"token #{id} revoked", "令牌 #{id} 已吊销"},
	OpMCPServerAdded:     {"MCP server “{name}” registered at {url}", "MCP 服务“{name}”已注册，地址 {url}"},
	OpMCPServerDeleted:   {"MCP server “{id}” removed", "MCP 服务“{id}”已移除"},
	OpQuotaRuleAdded:     {"quota rule “{name}” added: {limit} for {applies}, {who}", "配额规则“{name}”已添加：{applies}{limit}，{who}"},
	OpQuotaRuleDeleted:   {"quota rule “{name}” deleted", "配额规则“{name}”已删除"},
	OpProviderSaved:      {"OAuth provider “{name}” saved: client id {client_id}[, scopes {scopes}], {enabled}", "OAuth 提供方“{name}”已保存：客户端 ID {client_id}[，权限范围 {scopes}]，{enabled}"},
	OpProviderDeleted:    {"OAuth provider “{name}” deleted, with every user's connection to it", "OAuth 提供方“{name}”已删除，所有用户与它的连接随之删除"},
	OpConnectionAdded:    {"user {user} connected[ the account {account}] at {provider}", "用户 {user} 在 {provider} 连接了[账号 {account}]"},
	OpConnectionDeleted:  {"connection of user {user} to {provider} removed", "用户 {user} 与 {provider} 的连接已移除"},
	OpAgentAdded:         {"agent “{name}” added", "智能体“{name}”已添加"},
	OpAgentReplaced:      {"agent “{name}” replaced", "智能体“{name}”已替换"},
	OpAgentDeleted:       {"agent “{name}” deleted", "智能体“{name}”已删除"},
	OpSignIn:             {"signed in to the console", "登录了控制台"},
	OpSignOut:            {"signed out of the console", "退出了控制台"},
	OpDecided:            {"call “{tool}” for user {user} {outcome} by {by}[: {reason}]", "用户 {user} 的调用“{tool}”由{by}{outcome}[：{reason}]"},
	OpAnswered: {"question of the MCP server “{server}” during the call “{tool}”[ for user {user}][ in run {run}] {action} by {by} {route}",
		"[用户 {user} 的]调用“{tool}”[（运行 {run}）]中 MCP 服务“{server}”的提问由{by}{route}{action}"},
}

// auditValues say argument values in words: argument → value → the
// words in each language.
var auditValues = map[string]map[string][2]string{
	"consequential": {"true": {"consequential (each call waits for approval)", "需确认（每次调用等待批准）"},
		"false": {"not consequential", "无需确认"}, "derived": {"derived from the method or the import", "按方法或导入信息自动判断"}},
	"enabled": {"true": {"enabled", "已启用"}, "false": {"disabled", "已停用"}},
	"scope":   {"console": {"console only", "仅限控制台"}},
	"empty":   {"true": {"an empty password", "空密码"}},
	"outcome": {"approved": {"approved", "批准"}, "denied": {"denied", "拒绝"}, "continued": {"continued after connecting", "在连接后继续"},
		"cancelled": {"cancelled", "取消"}, "expired": {"expired", "过期"}},
	"action": {"accept": {"answered", "回答"}, "decline": {"declined", "拒绝回答"}, "cancel": {"cancelled", "取消"}},
	"route": {"page": {"on the approval page", "在审批页"}, "elicitation": {"in their MCP client's session", "在其 MCP 客户端会话中"},
		"input_required": {"in their MCP client (input_required)", "在其 MCP 客户端中（input_required）"}},
	"applies": {"all": {"all tools", "所有工具"}, "consequential": {"consequential tools", "需确认的工具"}, "run_tokens": {"the model tokens of runs", "运行消耗的模型令牌"}},
	"who":     {"": {"each user", "每个用户"}},
}

// auditActors say who in words; "user 7" is said "user 7" / "用户 7".
var auditActors = map[string][2]string{
	"admin":   {"the administrator", "管理员"},
	"service": {"the service (RuoYi)", "服务（RuoYi）"},
	"cli":     {"the command line", "命令行"},
	"unknown": {"someone signed out", "已退出的会话"},
}

// Actor says who in lang.
func Actor(lang, actor string) string {
	i := langIndex(lang)
	if w, ok := auditActors[actor]; ok {
		return w[i]
	}
	if id, ok := strings.CutPrefix(actor, "user "); ok && i == 1 {
		return "用户 " + id
	}
	return actor
}

func langIndex(lang string) int {
	if lang == LangZH {
		return 1
	}
	return 0
}

// Summary says what e changed, in lang. A row written before details
// existed reads as its method and path.
func Summary(lang string, e *store.AdminEvent) string {
	d := e.Details()
	w, ok := auditWords[d.Op]
	if !ok {
		return strings.TrimSpace(e.Action + " " + e.Target)
	}
	i := langIndex(lang)
	arg := func(name string) string {
		v := d.Args[name]
		switch name {
		case "by":
			return Actor(lang, v)
		case "who":
			if v != "" {
				return Actor(lang, v)
			}
		case "limit":
			return quotaLimit(i, v, d.Args["window"])
		}
		if words, ok := auditValues[name][v]; ok {
			return words[i]
		}
		return v
	}
	return fill(w[i], arg, func(name string) bool { _, said := auditValues[name][""]; return d.Args[name] != "" || said })
}

// fill replaces each {name} of s by value(name), leaving out a [part]
// unless has is true of every name in it.
func fill(s string, value func(string) string, has func(string) bool) string {
	var b strings.Builder
	for s != "" {
		open := strings.IndexAny(s, "[{")
		if open < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:open])
		if s[open] == '{' {
			end := strings.IndexByte(s[open:], '}') + open
			b.WriteString(value(s[open+1 : end]))
			s = s[end+1:]
			continue
		}
		end := strings.IndexByte(s[open:], ']') + open
		part := s[open+1 : end]
		all := true
		for rest := part; ; {
			a := strings.IndexByte(rest, '{')
			if a < 0 {
				break
			}
			z := strings.IndexByte(rest[a:], '}') + a
			all = all && has(rest[a+1:z])
			rest = rest[z+1:]
		}
		if all {
			b.WriteString(fill(part, value, has))
		}
		s = s[end+1:]
	}
	return b.String()
}

// quotaLimit says a quota rule's limit: "10 calls a day" / "每天 10 次调用",
// or a run-token budget "50000 tokens a day".
func quotaLimit(i int, n, window string) string {
	per := map[string][2]string{"minute": {"a minute", "每分钟"}, "hour": {"an hour", "每小时"}, "day": {"a day", "每天"}}[window]
	if per[0] == "" {
		per = [2]string{"a day", "每天"}
	}
	if window == "" { // run tokens
		return [2]string{n + " tokens " + per[0], per[1] + " " + n + " 个令牌"}[i]
	}
	return [2]string{n + " calls " + per[0], per[1] + " " + n + " 次调用"}[i]
}

// maxAuditArg bounds an argument's length: the column holds a row's
// words, not a document.
const maxAuditArg = 200

func auditArg(s string) string {
	if utf8.RuneCountInString(s) <= maxAuditArg {
		return s
	}
	r := []rune(s)
	return string(r[:maxAuditArg]) + "…"
}

// auditList says a list of names, the first few and how many more.
func auditList(names []string) string {
	const shown = 5
	if len(names) <= shown {
		return auditArg(strings.Join(names, ", "))
	}
	return auditArg(strings.Join(names[:shown], ", ") + fmt.Sprintf(" (+%d)", len(names)-shown))
}

// AuditKind is the kind a request is recorded as when it succeeds: ""
// for one that changes nothing (a read, a call, a run) and for the
// decisions, which the recorder reads from the items they decided
// (AuditDecision).
func AuditKind(method, path string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	for _, a := range auditedRoutes {
		if strings.HasPrefix(path, a.prefix) {
			if a.kind == "connection" && strings.HasSuffix(path, "/authorize") {
				return "" // starting a connection changes nothing yet
			}
			return a.kind
		}
	}
	return ""
}

// auditedRoutes are the path prefixes of the administrative changes, with
// the kind each is recorded as; the longest prefix first.
var auditedRoutes = []struct{ prefix, kind string }{
	{"/v1/runs/", "decision"},    // POST /v1/runs/{run_id}/resume: a person's decisions
	{"/v1/pending/", "decision"}, // POST /v1/pending/{id}
	{"/v1/plugins/import/", "import"},
	{"/v1/plugins", "plugin"},
	{"/v1/credentials", "credential"},
	{"/v1/tokens", "token"},
	{"/v1/mcp/servers", "mcp_server"},
	{"/v1/quotas", "quota_rule"},
	{"/v1/oauth/providers", "provider"},
	{"/v1/connections/", "connection"},
	{"/v1/agents", "agent"},
}

// DescribeChange is the detail of a successful change through the API:
// body is the request's (its start, when long), answer the start of the
// answer (read for a created token's id only), callerUser the caller's
// user (0 for the operator's tokens). A secret never enters it: a
// credential's value, a token, a client secret, a URL's query and
// userinfo are left out.
func DescribeChange(method, path string, body, answer []byte, callerUser int64, query url.Values) store.AdminDetail {
	var req map[string]json.RawMessage
	json.Unmarshal(body, &req) // a body cut or absent describes less
	str := func(k string) string {
		var v any
		if json.Unmarshal(req[k], &v) != nil || v == nil {
			return ""
		}
		switch v := v.(type) {
		case string:
			// Whole: Detail cuts every argument, and a URL cut before
			// SafeURL parsed it kept the start of a long userinfo as its
			// host (https://<token>…).
			return v
		case float64: // a JSON number: 2592000, not 2.592e+06
			return strconv.FormatFloat(v, 'f', -1, 64)
		case []any:
			var names []string
			for _, x := range v {
				names = append(names, fmt.Sprint(x))
			}
			return auditList(names)
		default:
			return auditArg(fmt.Sprint(v))
		}
	}
	seg := strings.Split(strings.Trim(path, "/"), "/") // v1, collection, ...
	at := func(i int) string {
		if i < len(seg) {
			s, err := url.PathUnescape(seg[i])
			if err == nil {
				return auditArg(s)
			}
			return auditArg(seg[i])
		}
		return ""
	}
	d := Detail
	coll := at(1)
	switch {
	case coll == "plugins" && len(seg) == 2:
		return d(OpPluginAdded, "name", str("name"))
	case coll == "plugins" && at(2) == "import" && at(3) == "openapi":
		src := SafeURL(str("url"))
		if src == "" {
			src = "(pasted)"
		}
		return d(OpImportOpenAPI, "source", src, "prefix", str("prefix"))
	case coll == "plugins" && at(2) == "import" && at(3) == "mcp":
		return d(OpImportMCP, "server", str("server"))
	case coll == "plugins" && at(2) == "consequential" && len(seg) == 3:
		v := str("consequential")
		if v == "" {
			v = "derived"
		}
		return d(OpPluginsClassified, "plugins", selection(str), "consequential", v)
	case coll == "plugins" && at(2) == "perms" && len(seg) == 3:
		perms := str("perms")
		if perms == "" {
			perms = "(none)"
		}
		return d(OpPluginsPerms, "plugins", selection(str), "perms", perms)
	case coll == "plugins":
		switch method {
		case http.MethodPut:
			return d(OpPluginReplaced, "name", at(2))
		case http.MethodDelete:
			return d(OpPluginDeleted, "name", at(2))
		case http.MethodPatch:
			if str("status") == store.StatusDisabled {
				return d(OpPluginDisabled, "name", at(2))
			}
			return d(OpPluginEnabled, "name", at(2))
		}
	case coll == "credentials" && at(2) == "rotate":
		return d(OpCredentialsRotated)
	case coll == "credentials" && method == http.MethodDelete:
		return d(OpCredentialDeleted, "user", at(2), "key", at(3))
	case coll == "credentials":
		empty := ""
		if v, ok := req["value"]; ok && string(v) == `""` {
			empty = "true"
		}
		return d(OpCredentialSet, "user", at(2), "key", at(3), "empty", empty)
	case coll == "tokens" && method == http.MethodDelete:
		return d(OpTokenRevoked, "id", at(2))
	case coll == "tokens":
		var created struct {
			ID int64 `json:"token_id"`
		}
		json.Unmarshal(answer, &created) // the token beside it is never kept
		scope := ""
		if str("console_only") == "true" {
			scope = "console"
		}
		expires := ""
		if s, err := strconv.ParseInt(str("expires_in_seconds"), 10, 64); err == nil && s > 0 {
			expires = fmt.Sprint(secondsDuration(s))
		}
		return d(OpTokenCreated, "id", strconv.FormatInt(created.ID, 10), "user", str("user_id"), "name", str("name"),
			"scope", scope, "perms", str("perms"), "expires", expires)
	case coll == "mcp" && method == http.MethodDelete:
		return d(OpMCPServerDeleted, "id", at(3))
	case coll == "mcp":
		return d(OpMCPServerAdded, "name", str("name"), "url", SafeURL(str("url")))
	case coll == "quotas" && method == http.MethodDelete:
		return d(OpQuotaRuleDeleted, "name", at(3))
	case coll == "quotas":
		applies, limit, window := "all", str("calls"), str("window")
		switch {
		case str("run_tokens_per_day") != "":
			applies, limit, window = "run_tokens", str("run_tokens_per_day"), ""
		case str("plugins") != "":
			applies = str("plugins")
		case str("tags") != "":
			applies = "#" + str("tags")
		case str("consequential") == "true":
			applies = "consequential"
		}
		who := ""
		if u := str("user_id"); u != "" {
			who = "user " + u
		}
		return d(OpQuotaRuleAdded, "name", str("name"), "limit", limit, "window", window, "applies", applies, "who", who)
	case coll == "oauth" && method == http.MethodDelete:
		return d(OpProviderDeleted, "name", at(3))
	case coll == "oauth":
		enabled := str("enabled")
		if enabled == "" {
			enabled = "true"
		}
		return d(OpProviderSaved, "name", str("name"), "client_id", str("client_id"), "scopes", str("scopes"), "enabled", enabled)
	case coll == "connections":
		user := query.Get("user_id")
		if user == "" {
			user = strconv.FormatInt(callerUser, 10)
		}
		return d(OpConnectionDeleted, "provider", at(2), "user", auditArg(user))
	case coll == "agents":
		switch method {
		case http.MethodDelete:
			return d(OpAgentDeleted, "name", at(2))
		case http.MethodPut:
			return d(OpAgentReplaced, "name", at(2))
		}
		return d(OpAgentAdded, "name", str("name"))
	}
	return store.AdminDetail{}
}

// Detail is the detail of op with the arguments kv (name, value, ...);
// an empty value is left out.
func Detail(op string, kv ...string) store.AdminDetail {
	args := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			args[kv[i]] = auditArg(kv[i+1])
		}
	}
	return store.AdminDetail{Op: op, Args: args}
}

// selection says which plugins a selection (names, a tag, a source)
// picks.
func selection(str func(string) string) string {
	switch {
	case str("names") != "":
		return str("names")
	case str("tag") != "":
		return "#" + str("tag")
	case str("source_id") != "":
		return "source " + str("source_id")
	}
	return "(none)"
}

// secondsDuration says a number of seconds as days or hours.
func secondsDuration(s int64) string {
	switch {
	case s%86400 == 0:
		return strconv.FormatInt(s/86400, 10) + "d"
	case s%3600 == 0:
		return strconv.FormatInt(s/3600, 10) + "h"
	}
	return strconv.FormatInt(s, 10) + "s"
}

// SafeURL is a URL without what may be a secret in it: its userinfo,
// query and fragment, and the value of a path parameter named as a
// credential (redact.Location: ";jsessionid=…").
func SafeURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "(a URL)"
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return auditArg(redact.Location(u.String()))
}

// AuditDecision is the detail of a person's decision on an item (an
// answer to a question is recorded as the call takes it: OpAnswered).
func AuditDecision(it *store.PendingItem, by string) store.AdminDetail {
	user := ""
	if it.UserID != nil {
		user = strconv.FormatInt(*it.UserID, 10)
	}
	args := map[string]string{"tool": auditArg(it.Tool), "user": user, "outcome": it.Status, "by": by, "digest": it.Digest, "pending": it.ID}
	if it.Reason != "" {
		args["reason"] = auditArg(it.Reason)
	}
	if it.RunID != "" {
		args["run"] = it.RunID
	}
	return store.AdminDetail{Op: OpDecided, Args: args}
}

// LangOf is the language a request asks for in Accept-Language: LangZH
// or LangEN (internal/language's rule).
func LangOf(r *http.Request) string {
	return language.Tags[language.Of(r)]
}

// AuditEntry is a row of the log as GET /v1/audit answers it.
type AuditEntry struct {
	ID         int64             `json:"log_id"`
	Time       string            `json:"time"`
	Actor      string            `json:"actor"`
	Who        string            `json:"who"`
	Via        string            `json:"via"`
	Kind       string            `json:"kind"`
	Op         string            `json:"op,omitempty"`
	Args       map[string]string `json:"args,omitempty"`
	Summary    string            `json:"summary"`
	Target     string            `json:"target"`
	HTTPStatus int               `json:"http_status"`
}

// listAudit is GET /v1/audit: the log newest first, a page at a time
// (cursor: the next page's), each row in words in the caller's language;
// as JSON lines with Accept: application/x-ndjson (an export), the next
// page's cursor then in the Link header.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > store.MaxAdminEvents {
			writeError(w, http.StatusBadRequest, "malformed_request", fmt.Sprintf("limit: expected an integer from 1 to %d", store.MaxAdminEvents), nil)
			return
		}
		limit = n
	}
	var before int64
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "malformed_request", "cursor: not a cursor this route answered", nil)
			return
		}
		before = n
	}
	events, err := s.Store.ListAdminEvents(r.Context(), store.AdminEventFilter{Kind: q.Get("kind"), Before: before, Limit: limit + 1})
	if err != nil {
		s.internal(w, r, err)
		return
	}
	next := ""
	if len(events) > limit {
		events = events[:limit]
		next = strconv.FormatInt(events[limit-1].ID, 10)
	}
	lang := LangOf(r)
	out := make([]AuditEntry, len(events))
	for i := range events {
		e := &events[i]
		d := e.Details()
		out[i] = AuditEntry{ID: e.ID, Time: e.CreateTime.UTC().Format("2006-01-02T15:04:05.000Z"), Actor: e.Actor, Who: Actor(lang, e.Actor),
			Via: e.Via, Kind: e.Kind, Op: d.Op, Args: d.Args, Summary: Summary(lang, e), Target: e.Target, HTTPStatus: e.HTTPStatus}
	}
	w.Header().Set("Content-Language", lang)
	w.Header().Set("Vary", "Accept, Accept-Language")
	if !strings.Contains(r.Header.Get("Accept"), ndjson) {
		writeJSON(w, http.StatusOK, map[string]any{"events": out, "next": nullable(next)})
		return
	}
	if next != "" {
		n := url.Values{"cursor": {next}, "limit": {strconv.Itoa(limit)}}
		if k := q.Get("kind"); k != "" {
			n.Set("kind", k)
		}
		w.Header().Set("Link", "</v1/audit?"+n.Encode()+`>; rel="next"`)
	}
	w.Header().Set("Content-Type", ndjson+"; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, e := range out {
		enc.Encode(e)
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
