package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"text/tabwriter"
	"time"
)

// firstCallBase is the commit whose first calls this tree's are compared
// with: main before issue 50, whose import compiled every parameter schema
// and then dropped them, so that a plugin's first call compiled its schema
// as after a start-up.
const firstCallBase = "3e45a15"

// firstCallProgram is built in both trees (added by an overlay, the same
// source): it converts the document and calls ValidateArguments({}) on
// every plugin twice, as a server's first call after a start-up or a sync
// and a later one, and prints the durations as JSON: wall time, and the
// CPU time of its thread (the call's own work, which other jobs on the
// machine do not stretch).
const firstCallProgram = `package main

import (
	"encoding/json"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/blindexec/blindexec/plugins/openapi"
)

func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3 /* CLOCK_THREAD_CPUTIME_ID */, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

func main() {
	runtime.LockOSThread()
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		panic(err)
	}
	doc, err := openapi.Load(data, os.Args[1])
	if err != nil {
		panic(err)
	}
	ops, _, err := openapi.Convert(doc, openapi.Options{BaseURL: "https://api.example.com"})
	if err != nil {
		panic(err)
	}
	var out struct{ First, Later, FirstCPU, LaterCPU []time.Duration }
	for _, op := range ops {
		for _, d := range [][2]*[]time.Duration{{&out.First, &out.FirstCPU}, {&out.Later, &out.LaterCPU}} {
			t0, c0 := time.Now(), threadCPU()
			op.Plugin.ValidateArguments(map[string]any{})
			*d[0] = append(*d[0], time.Since(t0))
			*d[1] = append(*d[1], threadCPU()-c0)
		}
	}
	json.NewEncoder(os.Stdout).Encode(out)
}
`

// buildFirstCall builds firstCallProgram in the tree at dir into out.
func buildFirstCall(ctx context.Context, dir, out string) error {
	src := out + ".go"
	if err := os.WriteFile(src, []byte(firstCallProgram), 0o644); err != nil {
		return err
	}
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(dir, "bench", "firstcallprogram", "main.go"): src}})
	if err != nil {
		return err
	}
	if err := os.WriteFile(out+".overlay.json", overlay, 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", out+".overlay.json", "-o", out, "./bench/firstcallprogram")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build of the first-call program in %s: %v: %s", dir, err, b)
	}
	return nil
}

// benchFirstCall runs the first-call program of o.firstCallBase and of this
// tree, taking turns, o.importRuns times each on Stripe, GitHub and Graph's
// smaller sample, and prints the quantiles of all their calls.
func benchFirstCall(ctx context.Context, o benchOpts, docs []scaleDoc, tmp string) error {
	base := filepath.Join(tmp, "firstcall-base")
	if err := inWorktree(ctx, o.root, o.firstCallBase, filepath.Join(tmp, "src-firstcall"), func() error {
		return buildFirstCall(ctx, filepath.Join(tmp, "src-firstcall"), base)
	}); err != nil {
		return err
	}
	head := filepath.Join(tmp, "firstcall-head")
	if err := buildFirstCall(ctx, o.root, head); err != nil {
		return err
	}
	fmt.Printf("== importscale: a plugin's first call after a start-up or a sync (its parameter schema compiled) and a later one: ValidateArguments({}) of every plugin of the document, a process each run; %s (main before issue 50) against this tree, %d alternating runs each, all calls pooled\n",
		o.firstCallBase, o.importRuns)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "   document\tplugins\tcommit\tfirst p50\tfirst p99\tfirst max\tfirst CPU p99\tlater p99\tlater CPU p99\tfirst p99 −\tfirst CPU p99 −\tlater CPU p99 −\t")
	for _, d := range docs {
		if d.ops > 1300 {
			continue // Stripe, GitHub and Graph's smaller sample
		}
		bins := []struct{ name, bin string }{{o.firstCallBase, base}, {"this tree", head}}
		type calls struct{ First, Later, FirstCPU, LaterCPU []time.Duration }
		pooled := make([]calls, len(bins))
		for range o.importRuns {
			for i, b := range bins {
				out, err := exec.CommandContext(ctx, b.bin, d.path).Output()
				if err != nil {
					return fmt.Errorf("first call, %s, %s: %w", d.name, b.name, err)
				}
				var c calls
				if err := json.Unmarshal(out, &c); err != nil {
					return fmt.Errorf("first call, %s, %s: %w", d.name, b.name, err)
				}
				p := &pooled[i]
				p.First, p.Later = append(p.First, c.First...), append(p.Later, c.Later...)
				p.FirstCPU, p.LaterCPU = append(p.FirstCPU, c.FirstCPU...), append(p.LaterCPU, c.LaterCPU...)
			}
		}
		var b99 [3]time.Duration // the base's first, first CPU and later CPU p99
		for i, b := range bins {
			c := pooled[i]
			for _, d := range [][]time.Duration{c.First, c.Later, c.FirstCPU, c.LaterCPU} {
				sortDurations(d)
			}
			p99 := [3]time.Duration{quantile(c.First, 0.99), quantile(c.FirstCPU, 0.99), quantile(c.LaterCPU, 0.99)}
			diff := "\t\t"
			if i == 0 {
				b99 = p99
			} else {
				diff = fmt.Sprintf("%v\t%v\t%v", round(p99[0]-b99[0]), round(p99[1]-b99[1]), round(p99[2]-b99[2]))
			}
			fmt.Fprintf(w, "   %s\t%d\t%s\t%v\t%v\t%v\t%v\t%v\t%v\t%s\t\n", d.name, len(c.First)/o.importRuns, b.name,
				round(quantile(c.First, 0.5)), round(p99[0]), round(c.First[len(c.First)-1]), round(p99[1]),
				round(quantile(c.Later, 0.99)), round(p99[2]), diff)
		}
	}
	return w.Flush()
}
