package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// memoryCalls is how many calls a stdio server answers before its
// resident memory is read again (issue 38's point 4).
const memoryCalls = 10_000

// procMemory is a process's resident memory from /proc/PID/status, in kB:
// anonymous pages (the Go heap, stacks, the runtime's own) and file pages
// (the binary's code and data, as far as it has touched them).
type procMemory struct{ rss, anon, file, hwm int64 }

func readProcMemory(pid int) (procMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, err
	}
	var m procMemory
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			m.rss = n
		case "RssAnon":
			m.anon = n
		case "RssFile":
			m.file = n
		case "VmHWM":
			m.hwm = n
		}
	}
	return m, nil
}

// gcLine is the runtime's GODEBUG=gctrace=1 line: the heap at the start
// of a cycle, at its end, and live after it, then the next cycle's goal.
var gcLine = regexp.MustCompile(`(\d+)->(\d+)->(\d+) MB, (\d+) MB goal`)

// lastGC returns the live heap and goal of the last collection in a
// gctrace log, or "" when none ran.
func lastGC(log string) string {
	b, _ := os.ReadFile(log)
	var last []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if m := gcLine.FindStringSubmatch(sc.Text()); m != nil {
			last = m
		}
	}
	if last == nil {
		return "no GC"
	}
	return fmt.Sprintf("%s MB live, goal %s MB", last[3], last[4])
}

// gatewayMemory starts each stdio server with an SDK client in this
// process and reads its resident memory after initialize and one call
// (at rest), and after memoryCalls more at concurrency conc.
func gatewayMemory(ctx context.Context, dir string, conc int, servers []struct {
	name string
	spec gatewaySpec
}) error {
	if len(servers) == 0 {
		return nil
	}
	fmt.Printf("== a stdio server's resident memory at rest (initialize and one call) and after %d calls at concurrency %d\n", memoryCalls, conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "server\tRSS at rest\tanon\tfile\tRSS after\tanon\tfile\tpeak\tGo heap after (last GC)\t\n")
	for i, s := range servers {
		log := filepath.Join(dir, fmt.Sprintf("memory-%d.log", i))
		f, err := os.Create(log)
		if err != nil {
			return err
		}
		cmd := exec.Command(s.spec.Command[0], s.spec.Command[1:]...)
		cmd.Env = append(append(os.Environ(), s.spec.Env...), "GODEBUG=gctrace=1")
		cmd.Stderr = f
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-memory", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		rest, after, err := memoryOf(ctx, cs, cmd.Process.Pid, conc)
		cs.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		mb := func(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.name, mb(rest.rss), mb(rest.anon), mb(rest.file),
			mb(after.rss), mb(after.anon), mb(after.file), mb(after.hwm), lastGC(log))
	}
	tw.Flush()
	fmt.Println("   anon: the Go heap, goroutine stacks and the runtime's own pages; file: the pages of the binary (and")
	fmt.Println("   libraries) it has touched; peak: VmHWM; the Go heap from the server's GODEBUG=gctrace=1")
	fmt.Println()
	return nil
}

func memoryOf(ctx context.Context, cs *sdk.ClientSession, pid, conc int) (rest, after procMemory, err error) {
	if err := callTool(ctx, cs); err != nil {
		return rest, after, err
	}
	if rest, err = readProcMemory(pid); err != nil {
		return rest, after, err
	}
	var left atomic.Int64
	left.Store(memoryCalls)
	var wg sync.WaitGroup
	errs := make([]error, conc)
	for w := range conc {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if errs[w] = callTool(ctx, cs); errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return rest, after, err
		}
	}
	after, err = readProcMemory(pid)
	return rest, after, err
}
