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
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// memoryCalls is how many calls a stdio server answers before its
// resident memory is read again (issue 38's point 4).
const memoryCalls = 10_000

// procMemory is a process's resident memory in kB, from
// /proc/PID/smaps: anonymous pages (the Go heap, goroutine stacks, the
// runtime's metadata, and what C-like code maps beside the Go heap:
// modernc's SQLite) and file pages (the binary's code and data as far as
// it has touched them); peak is VmHWM.
type procMemory struct{ rss, anon, file, peak int64 }

func readProcMemory(pid int) (procMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return procMemory{}, err
	}
	var m procMemory
	var region *int64
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			switch {
			case len(f) == 5 || strings.HasPrefix(f[5], "["):
				region = &m.anon
			default:
				region = &m.file
			}
			continue
		}
		if len(f) == 3 && f[0] == "Rss:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			*region += n
			m.rss += n
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procMemory{}, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			m.peak, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
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

// gcCPU is a gctrace line's CPU times: the first pause's, the marking's
// (assists / background workers / idle workers) and the second pause's.
var gcCPU = regexp.MustCompile(`([\d.]+)\+([\d.]+)/([\d.]+)/([\d.]+)\+([\d.]+) ms cpu`)

// gcsFrom counts the collections a gctrace log records from byte off on
// and sums their CPU time: the pauses', the assists' and the background
// workers' (cpu), and apart the idle workers' (idle), which the runtime
// counts as the time they held a processor no goroutine wanted — on a
// loaded host, time the host gave another process too.
func gcsFrom(log string, off int64) (cycles int, cpu, idle time.Duration) {
	b, _ := os.ReadFile(log)
	if off > int64(len(b)) {
		return 0, 0, 0
	}
	ms := func(s string) time.Duration {
		f, _ := strconv.ParseFloat(s, 64)
		return time.Duration(f * float64(time.Millisecond))
	}
	for line := range strings.Lines(string(b[off:])) {
		m := gcCPU.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cycles++
		cpu += ms(m[1]) + ms(m[2]) + ms(m[3]) + ms(m[5])
		idle += ms(m[4])
	}
	return cycles, cpu, idle
}

// gatewayMemory starts each stdio server with an SDK client in this
// process and reads its resident memory after initialize and one call
// (at rest), and after memoryCalls more at concurrency conc, and the CPU
// time the server spent on those: a stdio server is a process of its
// own, which the gateway's CPU/call column does not see.
func gatewayMemory(ctx context.Context, dir string, conc int, servers []struct {
	name string
	spec gatewaySpec
}) error {
	if len(servers) == 0 {
		return nil
	}
	fmt.Printf("== a stdio server's resident memory at rest (initialize and one call) and after %d calls at concurrency %d\n", memoryCalls, conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "server\tRSS at rest\tanon\tfiles\tRSS after\tanon\tfiles\tpeak\tGo heap after (last GC)\tserver CPU/call\tGCs /1,000 calls\tGC CPU/call\tidle marking/call\tcalls/s\t\n")
	for i, s := range servers {
		log := filepath.Join(dir, fmt.Sprintf("memory-%d.log", i))
		f, err := os.Create(log)
		if err != nil {
			return err
		}
		cmd := exec.Command(s.spec.Command[0], s.spec.Command[1:]...)
		cmd.Env = append(append(os.Environ(), s.spec.Env...), "GODEBUG=gctrace=1")
		cmd.Stderr = f
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench-memory", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd},
			&sdk.ClientSessionOptions{ProtocolVersion: s.spec.Protocol}) // as in the runs above
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		rest, after, run, err := memoryOf(ctx, cs, cmd.Process.Pid, conc, log)
		cs.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		mb := func(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%.0f\t\n", s.name, mb(rest.rss), mb(rest.anon), mb(rest.file),
			mb(after.rss), mb(after.anon), mb(after.file), mb(after.peak), lastGC(log),
			round(run.cpu/memoryCalls), float64(run.gcs)*1000/memoryCalls, round(run.gcCPU/memoryCalls), round(run.gcIdle/memoryCalls), memoryCalls/run.wall.Seconds())
	}
	tw.Flush()
	fmt.Println("   anon: the Go heap, goroutine stacks, the runtime's metadata and memory mapped beside the Go heap")
	fmt.Println("   (modernc's SQLite); files: the pages of the binary it has touched; peak: VmHWM; the Go heap from the")
	fmt.Println("   server's GODEBUG=gctrace=1; server CPU/call: the server process's user and system time over the calls")
	fmt.Println("   (/proc/PID/stat, 10 ms ticks), the client and the upstream being this process; GCs and GC CPU: the")
	fmt.Println("   collections gctrace logs during the calls and their CPU time (pauses, assists, background marking); idle marking:")
	fmt.Println("   its idle workers' time, which the runtime counts as held processors (on a loaded host, inflated)")
	fmt.Println()
	return nil
}

// serverRun is the server's CPU time over a run of calls and the run's
// wall-clock time, and the collections its gctrace log records meanwhile.
type serverRun struct {
	cpu, wall time.Duration
	gcs       int
	gcCPU     time.Duration // pauses, assists, background marking
	gcIdle    time.Duration // idle marking
}

func memoryOf(ctx context.Context, cs *sdk.ClientSession, pid, conc int, log string) (rest, after procMemory, run serverRun, err error) {
	if err := callTool(ctx, cs); err != nil {
		return rest, after, run, err
	}
	if rest, err = readProcMemory(pid); err != nil {
		return rest, after, run, err
	}
	var logAt int64
	if fi, err := os.Stat(log); err == nil {
		logAt = fi.Size()
	}
	cpu0, start := procCPU(pid), time.Now()
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
	run.cpu, run.wall = procCPU(pid)-cpu0, time.Since(start)
	run.gcs, run.gcCPU, run.gcIdle = gcsFrom(log, logAt)
	for _, err := range errs {
		if err != nil {
			return rest, after, run, err
		}
	}
	after, err = readProcMemory(pid)
	return rest, after, run, err
}
