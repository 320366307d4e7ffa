package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"gopkg.in/yaml.v3"

	"github.com/blindexec/blindexec/plugins/openapi"
)

// githubRuns is how many times each child parses (and converts) the
// document: the first, in a fresh process, gives the memory figures; all
// give the wall times.
const githubRuns = 3

// ghResult is what a "github" child measured, as JSON on its stdout.
type ghResult struct {
	Mode  string `json:"mode"`
	Bytes int    `json:"bytes"`
	// Wall times of each run, seconds; for "ours" each is parse+convert.
	Runs []float64 `json:"runs"`
	// First run, "ours" only: parse (openapi.Load) and convert apart.
	ParseSec   float64 `json:"parse_sec"`
	ConvertSec float64 `json:"convert_sec"`
	// Memory after the first run's parse and after its end: Go heap
	// obtained from the OS, bytes allocated during the run, and the
	// process's peak resident set (VmHWM, kB); RSSStartKB is the resident
	// set before the run, with the document's bytes already read.
	HeapSysParse    uint64 `json:"heap_sys_parse"`
	HeapSys         uint64 `json:"heap_sys"`
	TotalAllocParse uint64 `json:"total_alloc_parse"`
	TotalAlloc      uint64 `json:"total_alloc"`
	HWMParseKB      int64  `json:"hwm_parse_kb"`
	HWMKB           int64  `json:"hwm_kb"`
	RSSStartKB      int64  `json:"rss_start_kb"`
	// "ours": the conversion's result, and each operation converted alone.
	Operations int      `json:"operations"`
	Failures   []string `json:"failures,omitempty"`
	Warnings   int      `json:"warnings"`
	PerOpN     int      `json:"per_op_n"`
	PerOpP50   int64    `json:"per_op_p50_ns"`
	PerOpP99   int64    `json:"per_op_p99_ns"`
	PerOpMax   int64    `json:"per_op_max_ns"`
	PerOpSlow  string   `json:"per_op_slowest"`
}

// childGitHub is the "github" child (any large document, GitHub's first):
// args are the mode (unmarshal, kin or ours) and the document's path,
// gzipped when it ends in .gz (decompressed before any timing).
func childGitHub(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: -child github unmarshal|kin|ours FILE")
	}
	mode, path := args[0], args[1]
	data, err := readDoc(path)
	if err != nil {
		return err
	}
	r := ghResult{Mode: mode, Bytes: len(data)}
	var parse func() (any, error)
	switch mode {
	case "unmarshal":
		parse = func() (any, error) {
			var v map[string]any
			if isYAML(data) {
				return v, yaml.Unmarshal(data, &v)
			}
			return v, json.Unmarshal(data, &v)
		}
	case "kin":
		parse = func() (any, error) {
			l := openapi3.NewLoader()
			return l.LoadFromData(data)
		}
	case "ours":
		parse = func() (any, error) { return openapi.Load(data, strings.TrimSuffix(filepath.Base(path), ".gz")) }
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	alloc0 := ms.TotalAlloc
	r.RSSStartKB = procStatus("VmRSS")["VmRSS"]
	t0 := time.Now()
	v, err := parse()
	if err != nil {
		return fmt.Errorf("%s: parse: %w", mode, err)
	}
	r.ParseSec = time.Since(t0).Seconds()
	runtime.ReadMemStats(&ms)
	r.HeapSysParse, r.TotalAllocParse = ms.HeapSys, ms.TotalAlloc-alloc0
	r.HWMParseKB = procStatus("VmHWM")["VmHWM"]
	var doc *openapi.Document
	if mode == "ours" {
		doc = v.(*openapi.Document)
		t1 := time.Now()
		ops, failures, err := openapi.Convert(doc, openapi.Options{})
		if err != nil {
			return fmt.Errorf("convert: %w", err)
		}
		r.ConvertSec = time.Since(t1).Seconds()
		r.Runs = append(r.Runs, time.Since(t0).Seconds())
		r.Operations = len(ops)
		for _, f := range failures {
			r.Failures = append(r.Failures, f.Key+": "+f.Reason)
		}
		for _, op := range ops {
			r.Warnings += len(op.Warnings)
		}
		runtime.KeepAlive(ops)
	} else {
		r.Runs = append(r.Runs, r.ParseSec)
	}
	runtime.ReadMemStats(&ms)
	r.HeapSys, r.TotalAlloc = ms.HeapSys, ms.TotalAlloc-alloc0
	r.HWMKB = procStatus("VmHWM")["VmHWM"]
	runtime.KeepAlive(v)
	v = nil

	if doc != nil {
		perOperation(doc, &r)
		doc = nil
	}
	for len(r.Runs) < githubRuns {
		runtime.GC()
		t0 := time.Now()
		v, err := parse()
		if err != nil {
			return err
		}
		if mode == "ours" {
			if _, _, err := openapi.Convert(v.(*openapi.Document), openapi.Options{}); err != nil {
				return err
			}
		}
		r.Runs = append(r.Runs, time.Since(t0).Seconds())
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// perOperation converts each operation of doc alone: a copy of the
// document whose paths hold just that operation (and its path item's
// parameters and servers), through the public openapi.Convert.
func perOperation(doc *openapi.Document, r *ghResult) {
	paths, _ := doc.Raw["paths"].(map[string]any)
	type one struct {
		key string
		doc *openapi.Document
	}
	var docs []one
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		item, ok := paths[p].(map[string]any)
		if !ok {
			continue
		}
		for _, m := range httpMethods {
			op, ok := item[m]
			if !ok {
				continue
			}
			single := map[string]any{m: op}
			for k, v := range item {
				if !slices.Contains(httpMethods, k) {
					single[k] = v
				}
			}
			raw := maps.Clone(doc.Raw)
			raw["paths"] = map[string]any{p: single}
			d := *doc
			d.Raw = raw
			docs = append(docs, one{strings.ToUpper(m) + " " + p, &d})
		}
	}
	times := make([]time.Duration, len(docs))
	slowest := ""
	var worst time.Duration
	for i, d := range docs {
		t0 := time.Now()
		openapi.Convert(d.doc, openapi.Options{})
		times[i] = time.Since(t0)
		if times[i] > worst {
			worst, slowest = times[i], d.key
		}
	}
	sortDurations(times)
	r.PerOpN = len(times)
	r.PerOpP50 = int64(quantile(times, .5))
	r.PerOpP99 = int64(quantile(times, .99))
	r.PerOpMax = int64(worst)
	r.PerOpSlow = slowest
}

// runGitHubChild runs a "github" child and decodes its result.
func runGitHubChild(mode, path string) (*ghResult, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-child", "github", mode, path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("child %s: %v: %s", mode, err, strings.TrimSpace(stderr.String()))
	}
	var r ghResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("child %s: %v", mode, err)
	}
	return &r, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return s[len(s)/2]
}

func secs(x float64) string {
	return round(time.Duration(x * float64(time.Second))).String()
}

// readDoc reads a document, gunzipping a .gz file.
func readDoc(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}

func isYAML(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] != '{'
}

// bigDoc is a large public document the import group measures.
type bigDoc struct {
	title, path string
	issue       bool // GitHub's: issue 5.6's known figures and targets
}

// benchGitHub measures the import of GitHub's REST API description
// (issue 5.6), then Stripe's two corpus documents (SPEC §9 names both):
// ours against a bare unmarshal and kin-openapi's loader of the same
// bytes, each in a fresh child process.
// githubSpec is the path of GitHub's REST API description, fetched from
// the npm registry into the cache when absent.
func githubSpec(o benchOpts) (string, error) {
	tgz, err := octokitOpenAPI.fetch(o.cache)
	if err != nil {
		return "", err
	}
	dir, err := extract(tgz, "package/generated/", filepath.Join(o.cache, "octokit-openapi-"+octokitOpenAPI.version))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "api.github.com.json"), nil
}

func benchGitHub(ctx context.Context, o benchOpts) error {
	spec, err := githubSpec(o)
	if err != nil {
		return err
	}
	docs := []bigDoc{{fmt.Sprintf("GitHub's REST API description (%s, generated/api.github.com.json)", octokitOpenAPI), spec, true}}
	corpus := filepath.Join(o.root, "../shared/corpus/stripe")
	for _, name := range []string{"spec3.2022-04-12.e0123a38.json.gz", "spec3.2023-09-12.63a67463.yaml.gz"} {
		if _, err := os.Stat(filepath.Join(corpus, name)); err == nil {
			docs = append(docs, bigDoc{"Stripe (../shared/corpus/stripe/" + name + ")", filepath.Join(corpus, name), false})
		} else {
			fmt.Printf("   (Stripe's %s skipped: not found beside the repository in ../shared/corpus/stripe)\n", name)
		}
	}
	for _, d := range docs {
		if err := benchBigDoc(d); err != nil {
			return fmt.Errorf("%s: %w", d.path, err)
		}
	}
	return nil
}

func benchBigDoc(d bigDoc) error {
	var res = map[string]*ghResult{}
	for _, mode := range []string{"unmarshal", "kin", "ours"} {
		var err error
		if res[mode], err = runGitHubChild(mode, d.path); err != nil {
			return err
		}
	}
	ours, ref, kin := res["ours"], res["unmarshal"], res["kin"]
	refName := "json.Unmarshal"
	if strings.Contains(d.path, ".yaml") {
		refName = "yaml.v3 Unmarshal"
	}
	fmt.Printf("== import: %s, %.1f MB, %d operations\n", d.title, float64(ours.Bytes)/1e6, ours.Operations+len(ours.Failures))
	fmt.Printf("   each subject in a fresh child process; wall time of the first run and the median of %d; memory of the first run\n", githubRuns)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	known := func(s string) string {
		if d.issue {
			return s
		}
		return ""
	}
	fmt.Fprintf(tw, "subject\tfirst run\tmedian\tmedian ×%s\t%s\tHeapSys\tTotalAlloc\tpeak RSS (VmHWM)\t\n", refName, known("known (issue 5.6)"))
	row := func(name string, first, med float64, known string, heapSys, total uint64, hwmKB int64) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\t\n", name, secs(first), secs(med), med/median(ref.Runs), known,
			mb(heapSys), mb(total), mb(uint64(hwmKB)<<10))
	}
	row("bare "+refName+" (map[string]any)", ref.Runs[0], median(ref.Runs), known("0.13 s"), ref.HeapSys, ref.TotalAlloc, ref.HWMKB)
	row("kin-openapi "+modVersion("github.com/getkin/kin-openapi")+" loader (no validation)", kin.Runs[0], median(kin.Runs), known("1.65 s"), kin.HeapSys, kin.TotalAlloc, kin.HWMKB)
	if d.issue {
		fmt.Fprintf(tw, "%s\t\t\t\t%s\t\t\t%s\t\n", "Higress's converter (known, not run)", "2.1 s", "420+ MB")
		fmt.Fprintf(tw, "%s\t\t\t\t%s\t\t\t\t\n", "openapi-mcp (known, not run)", "3.2 s")
	}
	fmt.Fprintf(tw, "%s\t%s\t\t\t\t%s\t%s\t%s\t\n", "blindexec openapi.Load (parse)", secs(ours.ParseSec),
		mb(ours.HeapSysParse), mb(ours.TotalAllocParse), mb(uint64(ours.HWMParseKB)<<10))
	fmt.Fprintf(tw, "%s\t%s\t\t\t\t\t\t\t\n", "blindexec openapi.Convert (convert)", secs(ours.ConvertSec))
	row("blindexec Load + Convert (whole import)", ours.Runs[0], median(ours.Runs), "", ours.HeapSys, ours.TotalAlloc, ours.HWMKB)
	tw.Flush()
	fmt.Printf("   resident set before each run (binary + document bytes): reference %s, kin %s, ours %s\n",
		mb(uint64(ref.RSSStartKB)<<10), mb(uint64(kin.RSSStartKB)<<10), mb(uint64(ours.RSSStartKB)<<10))
	fmt.Printf("   operations: %d converted, %d failed, %d warnings\n", ours.Operations, len(ours.Failures), ours.Warnings)
	for _, f := range ours.Failures {
		fmt.Printf("     failed: %s\n", f)
	}
	p99 := time.Duration(ours.PerOpP99)
	fmt.Printf("   per operation (each converted alone, n=%d): p50 %s, p99 %s, max %s (%s)\n", ours.PerOpN,
		round(time.Duration(ours.PerOpP50)), round(p99), round(time.Duration(ours.PerOpMax)), ours.PerOpSlow)
	hwm := uint64(ours.HWMKB) << 10
	what := "targets"
	if !d.issue {
		what = "GitHub's targets, for scale"
	}
	fmt.Printf("   %s: whole document < 1 s: %s (first run %s), %s (median %s); < 300 MB peak RSS: %s (%s);\n", what,
		verdict(ours.Runs[0] < 1), secs(ours.Runs[0]), verdict(median(ours.Runs) < 1), secs(median(ours.Runs)), verdict(hwm < 300<<20), mb(hwm))
	fmt.Printf("            one operation < 1 ms p99: %s (%s); seed 004's 100 ms: %s\n",
		verdict(p99 < time.Millisecond), round(p99), verdict(p99 < 100*time.Millisecond))
	fmt.Println()
	return nil
}

// modVersion is the version of module path in this binary.
func modVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}
