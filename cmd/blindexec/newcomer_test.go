package main

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/blindexec/blindexec/internal/settings"
	"github.com/blindexec/blindexec/store"
)

// TestReadOnlyCommandsNeverMigrate: on a new database every command but
// migrate and serve refuses, says to run `blindexec migrate`, and leaves
// the database unmigrated.
func TestReadOnlyCommandsNeverMigrate(t *testing.T) {
	c := newCLI(t)
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	c.db = "sqlite:" + fresh
	// No file: refused without creating one.
	if code, _, errs := c.run("", "plugin", "list"); code != 1 || !strings.Contains(errs, "no database at "+fresh) {
		t.Fatalf("plugin list without a database file: %d %q", code, errs)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("a read-only command created %s", fresh)
	}
	// An empty file (as other tools leave): refused, still unmigrated.
	os.WriteFile(fresh, nil, 0o600)
	for _, args := range [][]string{
		{"plugin", "list"}, {"tools"}, {"cred", "list", "7"}, {"token", "list"},
		{"mcp", "server", "list"}, {"exec", "x", "--args", "{}"},
	} {
		code, _, errs := c.run("", args...)
		if code != 1 || !strings.Contains(errs, "run `blindexec migrate`") {
			t.Errorf("%v on a new database: exit %d, %q", args, code, errs)
		}
	}
	if code, out, errs := c.run("", "migrate"); code != 0 || !strings.Contains(out, "migrated") {
		t.Fatalf("migrate: %d %q %q", code, out, errs)
	}
	if code, _, errs := c.run("", "plugin", "list"); code != 0 {
		t.Fatalf("plugin list after migrate: %d %q", code, errs)
	}
}

// TestStrictSettings: a bad BLINDEXEC_* value stops the program, naming
// the variable and what it accepts; valid spellings are understood.
func TestStrictSettings(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct{ name, value, want string }{
		{"BLINDEXEC_NO_MIGRATE", "yes please", "BLINDEXEC_NO_MIGRATE=\"yes please\" (from the environment): want true or false"},
		{"BLINDEXEC_MAX_TIMEOUT_MS", "5s", "BLINDEXEC_MAX_TIMEOUT_MS=\"5s\" (from the environment): want a whole number of milliseconds"},
		{"BLINDEXEC_CHANGE_POLL_MS", "2 seconds", "BLINDEXEC_CHANGE_POLL_MS"},
		{"BLINDEXEC_LOG_LEVEL", "verbose", "want one of debug, info, warn, error"},
		{"BLINDEXEC_MCP_USER", "alice", "BLINDEXEC_MCP_USER=\"alice\""},
		{"BLINDEXEC_MCP_ALLOW_STDIO", "on", "BLINDEXEC_MCP_ALLOW_STDIO"},
		{"BLINDEXEC_ADDR", "8080", "BLINDEXEC_ADDR=\"8080\" (from the environment): want HOST:PORT"},
		{"BLINDEXEC_LLM_BASE_URL", "api.openai.com/v1", "BLINDEXEC_LLM_BASE_URL"},
		{"BLINDEXEC_DB", "blindexec.db", "BLINDEXEC_DB=\"blindexec.db\" (from the environment): want sqlite:PATH or mysql:DSN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(tc.name, tc.value)
			code, _, errs := c.run("", "plugin", "list")
			if code != exitUsage || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and %q on one line", code, errs, tc.want)
			}
		})
	}
	// BLINDEXEC_NO_MIGRATE=false means false (it used to disable migrating).
	cfg := &config{}
	t.Setenv("BLINDEXEC_NO_MIGRATE", "false")
	t.Setenv("BLINDEXEC_MAX_TIMEOUT_MS", "1500")
	if code := run(cfg, []string{"--db", c.db, "plugin", "list"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Fatalf("valid settings: exit %d", code)
	}
	if cfg.noMigrate || cfg.maxTimeout.Milliseconds() != 1500 {
		t.Fatalf("noMigrate %v, maxTimeout %v", cfg.noMigrate, cfg.maxTimeout)
	}
}

func TestDatabaseURLRefused(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	t.Chdir(dir)
	c.db = "sqlite://file.db"
	code, _, errs := c.run("", "migrate")
	if code != 1 || !strings.Contains(errs, "without //") || !strings.Contains(errs, "sqlite:blindexec.db") {
		t.Fatalf("sqlite://: %d %q", code, errs)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused DSN created %v", entries)
	}
}

// TestDatabaseUnreachableNamed (newcomer80): a database not reached (a
// MariaDB not started, a DSN's wrong port) said only "open mysql
// database: dial tcp …: connection refused": the error now names the
// setting, its value without the password, and where it was set.
func TestDatabaseUnreachableNamed(t *testing.T) {
	c := newCLI(t)
	const dsn = "mysql:root:hunter2@tcp(127.0.0.1:1)/ry"
	for _, tc := range []struct {
		env, origin string
	}{
		{"", "from --db"},
		{dsn, "from the environment"},
	} {
		t.Setenv("BLINDEXEC_DB", tc.env)
		c.db = dsn
		code, _, errs := c.run("", "plugin", "list")
		want := `(BLINDEXEC_DB="…@tcp(127.0.0.1:1)/ry" ` + tc.origin + ")"
		if code != 1 || !strings.Contains(errs, "connection refused") || !strings.Contains(errs, want) || strings.Contains(errs, "hunter2") {
			t.Errorf("BLINDEXEC_DB=%q: exit %d, stderr %q; want 1 and %q", tc.env, code, errs, want)
		}
	}
}

// TestTokenTTLNegativeRefused (newcomer80): token create --ttl -1h issued
// a token that never expired (a ttl below 0 was taken for none); it is
// now bad usage naming --ttl, and nothing is issued.
func TestTokenTTLNegativeRefused(t *testing.T) {
	c := newCLI(t)
	if code, _, errs := c.run("", "migrate"); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := c.run("", "token", "create", "--user", "7", "--ttl", "-1h")
	if want := "token create: --ttl -1h0m0s: a token's lifetime is 0 (it never expires) or more"; code != exitUsage || out != "" || !strings.Contains(errs, want) {
		t.Fatalf("--ttl -1h: exit %d, stdout %q, stderr %q; want 2 and %q", code, out, errs, want)
	}
	if _, out, _ := c.run("", "token", "list"); strings.Contains(out, "bx_") {
		t.Fatalf("a refused token was issued:\n%s", out)
	}
}

func TestUnknownSubcommand(t *testing.T) {
	c := newCLI(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plugn"}, `did you mean "plugin"?`},
		{[]string{"plugin", "lst"}, `unknown command "lst" for "blindexec plugin"; did you mean`},
		{[]string{"plugin", "lis"}, `did you mean "list"?`},
		{[]string{"mcp", "server", "remove"}, `unknown command "remove" for "blindexec mcp server"`},
		{[]string{"cred", "zzzzzz"}, "see `blindexec cred --help`"},
		{[]string{"completion", "fishy"}, `did you mean "fish"?`},
	} {
		code, out, errs := c.run("", tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out, errs, tc.want)
		}
	}
	// A group without a subcommand prints its help.
	if code, out, _ := c.run("", "plugin"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Fatalf("plugin alone: %d %q", code, out)
	}
}

func TestVersion(t *testing.T) {
	c := newCLI(t)
	code, out, _ := c.run("", "--version")
	if code != 0 || !strings.HasPrefix(out, "blindexec ") || !strings.Contains(out, "commit ") {
		t.Fatalf("--version: %d %q", code, out)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tc := range []struct {
		info            *debug.BuildInfo
		ldVer, ldCommit string
		want            string
	}{
		{info, "", "", "v1.4.0 (commit 0123456789ab, modified, go1.26.8)"},
		{info, "v2.0.0", "fedcba9876543210", "v2.0.0 (commit fedcba987654, go1.26.8)"},
		{&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "", "devel (commit unknown, go1.26.8)"},
		{nil, "", "", "devel (commit unknown)"},
	} {
		if got := describeVersion(tc.info, tc.ldVer, tc.ldCommit); got != tc.want {
			t.Errorf("describeVersion = %q, want %q", got, tc.want)
		}
	}
}

// TestREADMEBuildStampsTheCommit runs the README's build command and reads
// the commit back from --version: a plain `go build` records none in a
// linked git worktree or with -buildvcs=false (docs/cli.md), which is how
// a newcomer's binary said "commit unknown" where the README promised it.
func TestREADMEBuildStampsTheCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	build := regexp.MustCompile(`(?m)^go build (-ldflags .*) \./cmd/blindexec$`).FindSubmatch(readme)
	if build == nil {
		t.Fatal("README.md gives no `go build -ldflags ... ./cmd/blindexec` line")
	}
	bin := filepath.Join(t.TempDir(), "blindexec")
	cmd := exec.Command("sh", "-c", "go build -o '"+bin+"' "+string(build[1])+" ./cmd/blindexec")
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if want := "commit " + string(head[:12]); err != nil || !strings.Contains(string(out), want) {
		t.Fatalf("--version of the README's build: %q %v; want %q", out, err, want)
	}
}

// designDoc matches what cites the documents behind the product: "seed
// 000", "seeds 000 and 003", "§9", "SPEC.md".
var designDoc = regexp.MustCompile(`(?i)\bseeds? \d|§|\bSPEC\.md`)

// TestHelpSpeaksOfTheProduct: no help text cites the design documents.
func TestHelpSpeaksOfTheProduct(t *testing.T) {
	root := newRoot(&config{}, settings.FromEnv(os.LookupEnv), strings.NewReader(""), io.Discard, io.Discard)
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, text := range []string{cmd.Short, cmd.Long, cmd.Use} {
			if designDoc.MatchString(text) {
				t.Errorf("%s: help cites a design document: %q", cmd.CommandPath(), text)
			}
		}
		if u := cmd.LocalFlags().FlagUsages(); designDoc.MatchString(u) {
			t.Errorf("%s flags cite the design documents:\n%s", cmd.CommandPath(), u)
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
}

// TestInitGivesTheKeyAHome: init writes a 0600 env file that every later
// command reads, never overwrites it, and the environment wins over it.
func TestInitGivesTheKeyAHome(t *testing.T) {
	c := newCLI(t)
	env := filepath.Join(t.TempDir(), "blindexec.env")
	t.Setenv("BLINDEXEC_ENV_FILE", env)
	// A key in the environment would shadow the file's: refused.
	if code, _, errs := c.run("", "init"); code != 1 || !strings.Contains(errs, "set in the environment") {
		t.Fatalf("init with a key in the environment: %d %q", code, errs)
	}
	os.Unsetenv("BLINDEXEC_MASTER_KEY") // t.Setenv in newCLI restores it
	code, out, errs := c.run("", "init")
	if code != 0 || !strings.Contains(out, env) {
		t.Fatalf("init: %d %q %q", code, out, errs)
	}
	fi, err := os.Stat(env)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("env file mode: %v %v", fi.Mode().Perm(), err)
	}
	// The file holds the two tokens the README's tour uses, distinct, and
	// every command reads them as its settings.
	os.Unsetenv("BLINDEXEC_ADMIN_TOKEN")
	os.Unsetenv("BLINDEXEC_SERVICE_TOKEN")
	src, err := settings.Load(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	admin, service := setAdminToken.Get(src), setServiceToken.Get(src)
	if len(admin) < 32 || len(service) < 32 || admin == service {
		t.Fatalf("init's tokens: admin %d chars, service %d chars, equal %v", len(admin), len(service), admin == service)
	}
	for _, name := range []string{"BLINDEXEC_ADMIN_TOKEN", "BLINDEXEC_SERVICE_TOKEN"} {
		if o := src.Origin(name); !strings.Contains(o, env) {
			t.Errorf("%s comes from %q, want the env file", name, o)
		}
	}
	// Two separate commands share the file's key: what one stores the
	// next reads.
	if code, _, errs := c.run("sk-from-block-one-1234", "cred", "set", "7", "QCC_KEY"); code != 0 {
		t.Fatalf("cred set: %d %q", code, errs)
	}
	if code, out, errs := c.run("", "cred", "list", "7"); code != 0 || !strings.Contains(out, "****1234") {
		t.Fatalf("cred list: %d %q %q", code, out, errs)
	}
	data, _ := os.ReadFile(env)
	if code, _, errs := c.run("", "init"); code != 1 || !strings.Contains(errs, "never overwrites") {
		t.Fatalf("second init: %d %q", code, errs)
	}
	if after, _ := os.ReadFile(env); string(after) != string(data) {
		t.Fatal("a second init changed the env file")
	}
	// A named env file that does not exist stops every other command.
	t.Setenv("BLINDEXEC_ENV_FILE", env+".missing")
	if code, _, errs := c.run("", "plugin", "list"); code != exitUsage || !strings.Contains(errs, "BLINDEXEC_ENV_FILE") {
		t.Fatalf("missing env file: %d %q", code, errs)
	}
}

// TestOpenAPIBaseURLTrusted: the operator's --base-url is reached even on
// loopback, which the egress policy otherwise refuses.
func TestOpenAPIBaseURLTrusted(t *testing.T) {
	doc, err := os.ReadFile(fastapiDoc(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	}))
	defer srv.Close()
	c := newCLI(t)
	t.Setenv("BLINDEXEC_EGRESS_ALLOW", "")
	code, out, errs := c.run("", "openapi", "fetch", "--base-url", srv.URL)
	if code != 0 || !strings.Contains(out, "sha256") {
		t.Fatalf("openapi fetch --base-url on loopback: %d %q %q", code, out, errs)
	}
	// Only the given URL's host is trusted.
	cfg := &config{}
	client, err := cfg.egressClient("http://localhost:8000")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "egress") {
		t.Fatalf("another loopback host must stay refused: %v", err)
	}
}

// TestWrongMasterKeyRefused: a command run with another master key than
// the one the database's credentials were stored with stops, saying so,
// instead of failing on the first credential read.
func TestWrongMasterKeyRefused(t *testing.T) {
	c := newCLI(t)
	if code, _, errs := c.run("sk-0123456789abcdef", "cred", "set", "7", "QCC_KEY"); code != 0 {
		t.Fatalf("cred set: %d %q", code, errs)
	}
	key := make([]byte, 32)
	rand.Read(key)
	t.Setenv("BLINDEXEC_MASTER_KEY", base64.StdEncoding.EncodeToString(key))
	for _, args := range [][]string{
		{"cred", "list", "7"},
		{"cred", "set", "7", "OTHER"},
		{"exec", "nothing", "--args", "{}"},
	} {
		code, _, errs := c.run("v", args...)
		if code != 1 || !strings.Contains(errs, "cannot decrypt this database's credentials") || !strings.Contains(errs, "from the environment") {
			t.Errorf("%v with another key: %d %q", args, code, errs)
		}
	}
}

// TestPluginMeaningCheckedByCLIAndImport: plugin add and import openapi
// refuse what cannot work, naming the field.
func TestPluginMeaningCheckedByCLIAndImport(t *testing.T) {
	c := newCLI(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name":"t","description":"d","parameters":{"type":"object","properties":{}},
	"execution":{"method":"GET","base_url":"https://a.example/{id}"}}`), 0o600)
	if code, _, errs := c.run("", "plugin", "add", bad); code != 1 || !strings.Contains(errs, "execution.base_url: the template {id} names no parameter") {
		t.Fatalf("plugin add: %d %q", code, errs)
	}
	mcp := filepath.Join(dir, "mcp.json")
	os.WriteFile(mcp, []byte(`{"name":"m","description":"d","parameters":{"type":"object"},"execution":{"type":"mcp","mcp_id":"ghost","tool_name":"x"}}`), 0o600)
	if code, _, errs := c.run("", "plugin", "add", mcp); code != 1 || !strings.Contains(errs, "execution.mcp_id") {
		t.Fatalf("plugin add of an MCP plugin without its server: %d %q", code, errs)
	}
	// An operation whose one allowed value contradicts its own type (a
	// fixed param that fails every call) fails the import, with its
	// reason; the other imports.
	spec := filepath.Join(dir, "api.yaml")
	os.WriteFile(spec, []byte(`openapi: 3.0.3
info: {title: T, version: "1"}
servers: [{url: "https://api.example"}]
paths:
  /items/{id}:
    get:
      operationId: getItem
      parameters:
        - {name: id, in: path, required: true, schema: {type: string}}
        - {name: mode, in: query, schema: {type: integer, enum: [fast]}}
      responses: {"200": {description: ok}}
  /items:
    get: {operationId: listItems, responses: {"200": {description: ok}}}
`), 0o600)
	code, out, errs := c.run("", "import", "openapi", spec)
	if code != exitPartial || !strings.Contains(out, "fixed_params.mode") || !strings.Contains(out, "+ listItems") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
}

// TestEnvFileMisspeltSetting: a name in the env file that is no setting
// stops every command, naming it and its line, instead of leaving the
// default in force.
func TestEnvFileMisspeltSetting(t *testing.T) {
	c := newCLI(t)
	env := filepath.Join(t.TempDir(), "blindexec.env")
	os.WriteFile(env, []byte("BLINDEXEC_MAX_TIMOUT_MS=5000\n"), 0o600)
	t.Setenv("BLINDEXEC_ENV_FILE", env)
	code, _, errs := c.run("", "plugin", "list")
	if want := `BLINDEXEC_MAX_TIMOUT_MS="5000" (from ` + env + `:1): want the name of a setting`; code != exitUsage || !strings.Contains(errs, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}

// TestCLIPageListsEveryFlag: docs/cli.md says it lists every command and
// its flags; a flag added to a command and not to its line there (chat
// --max-steps, import openapi --source, mcp server add --trusted were
// missing) fails here. A command's line is the list's entry that begins
// with its path, or with its parent's for a line naming several
// subcommands (openapi fetch|index|...); the root's flags, which every
// command takes, are named anywhere on the page.
func TestCLIPageListsEveryFlag(t *testing.T) {
	page, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(page), "```\n")
	block, _, _ = strings.Cut(block, "```")
	var entries []string // each "blindexec ..." line with its indented continuations
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(line, "blindexec ") || len(entries) == 0 {
			entries = append(entries, line)
		} else {
			entries[len(entries)-1] += "\n" + line
		}
	}
	root := newRoot(&config{}, settings.FromEnv(os.LookupEnv), strings.NewReader(""), io.Discard, io.Discard)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(string(page), "--"+f.Name) {
			t.Errorf("docs/cli.md does not name the global flag --%s", f.Name)
		}
	})
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, c := range cmd.Commands() {
			walk(c)
		}
		if cmd == root || cmd.Hidden || cmd.Name() == "help" || strings.HasPrefix(cmd.CommandPath(), "blindexec completion") {
			return
		}
		var lines []string
		for words := strings.Fields(cmd.CommandPath()); len(lines) == 0 && len(words) > 1; words = words[:len(words)-1] {
			prefix := strings.Join(words, " ")
			for _, e := range entries {
				if e == prefix || strings.HasPrefix(e, prefix+" ") {
					lines = append(lines, e)
				}
			}
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Hidden || root.PersistentFlags().Lookup(f.Name) != nil {
				return
			}
			if !slices.ContainsFunc(lines, func(e string) bool { return strings.Contains(e, "--"+f.Name) }) {
				t.Errorf("docs/cli.md: %s's line does not name --%s", cmd.CommandPath(), f.Name)
			}
		})
	}
	walk(root)
}

// TestHelpStartsAsTheREADME: the root help's first steps are the README's,
// init then serve (which migrates); it told a newcomer to migrate between
// them, a step the README does not have (newcomer74).
func TestHelpStartsAsTheREADME(t *testing.T) {
	root := newRoot(&config{}, settings.FromEnv(os.LookupEnv), strings.NewReader(""), io.Discard, io.Discard)
	start, serve := strings.Index(root.Long, "`blindexec init`"), strings.Index(root.Long, "`blindexec serve`")
	if start < 0 || serve < start || strings.Contains(root.Long, "`blindexec migrate`") {
		t.Errorf("the root help's first steps are not the README's (init, then serve, which migrates):\n%s", root.Long)
	}
}

// operator75: an upgrade says what it changed. `migrate` prints the
// migrations it applied (an older database's: 00027, applied below 00028)
// or that there were none, and serve logs them; before, both said only
// "migrated" or nothing, whatever they did.
func TestMigrateSaysWhatItApplied(t *testing.T) {
	c := newCLI(t)
	st, err := store.Open(t.Context(), c.db)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ALTER TABLE sys_ai_oauth_provider DROP COLUMN iss_supported",
		"DELETE FROM goose_db_version WHERE version_id = 27",
	} {
		if _, err := st.DB().ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	st.Close()
	if code, out, errs := c.run("", "migrate"); code != 0 || !strings.Contains(out, "migrated (sqlite): applied 00027\n") {
		t.Errorf("migrate of a database lacking 00027: %d %q %s", code, out, errs)
	}
	if code, out, errs := c.run("", "migrate"); code != 0 || !strings.Contains(out, "already up to date") {
		t.Errorf("migrate again: %d %q %s", code, out, errs)
	}

	cmd, logs, addr := serveProcess(t, "BLINDEXEC_DB=sqlite:"+filepath.Join(t.TempDir(), "new.db"),
		"BLINDEXEC_SPOOL_DIR="+t.TempDir(), "BLINDEXEC_LOG_LEVEL=info")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("serve not ready within 30 s")
		}
	}
	cmd.Process.Signal(os.Interrupt)
	exitOf(t, cmd) // its output complete before it is read
	if !strings.Contains(logs.String(), `"msg":"database migrated","db":"sqlite","applied":"00001, 00002,`) {
		t.Errorf("serve on a new database logs no migration:\n%s", logs)
	}
}
