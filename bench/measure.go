package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"
)

// subject is one way of making the same call.
type subject struct {
	name string
	call func(ctx context.Context) error
	// remote, when set, makes the calls from a client process of its own
	// (call is then unused).
	remote *remoteClient
}

// once makes one call.
func (s subject) once(ctx context.Context) error {
	if s.remote != nil {
		_, err := s.remote.do(remoteOp{Op: "warmup", N: 1})
		return err
	}
	return s.call(ctx)
}

// warmup makes n calls.
func (s subject) warmup(ctx context.Context, n int) error {
	if s.remote != nil {
		_, err := s.remote.do(remoteOp{Op: "warmup", N: n})
		return err
	}
	for range n {
		if err := s.call(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (s subject) latency(ctx context.Context, n int) ([]time.Duration, error) {
	if s.remote != nil {
		a, err := s.remote.do(remoteOp{Op: "latency", N: n})
		if err != nil {
			return nil, err
		}
		return a.Latencies, nil
	}
	return latency(ctx, s, n)
}

func (s subject) throughput(ctx context.Context, conc int, dur time.Duration) (int64, time.Duration, error) {
	if s.remote != nil {
		a, err := s.remote.do(remoteOp{Op: "throughput", Conc: conc, Dur: dur})
		if err != nil {
			return 0, 0, err
		}
		return a.Calls, a.Took, nil
	}
	return throughput(ctx, s, conc, dur)
}

type figures struct {
	p50, p99 time.Duration
	rps      float64
	// allocs and bytes per call in this process during the latency
	// phase: client, server and upstream alike when they run in it.
	allocs, bytes float64
	// cpu is this process's CPU time (user and system) per call during
	// the throughput phase: steadier than calls/s on a shared machine,
	// since time another tenant takes is not in it.
	cpu time.Duration
	// tail is this process's runtime during the latency phase.
	tail tail
	// perRound is each round's p50 and calls/s: a ratio of two subjects
	// taken round by round sees the same machine on both sides.
	perRound []roundFigures
	// idle is the share of the throughput phase's processor time (of
	// GOMAXPROCS) the Go runtime found no goroutine to run: time the
	// calls spent waiting, not working (time the host gave other
	// processes is not in it).
	idle float64
}

type roundFigures struct {
	p50 time.Duration
	rps float64
}

// latency runs call n times one after another and returns each duration.
func latency(ctx context.Context, s subject, n int) ([]time.Duration, error) {
	d := make([]time.Duration, n)
	for i := range d {
		t0 := time.Now()
		if err := s.call(ctx); err != nil {
			return nil, err
		}
		d[i] = time.Since(t0)
	}
	return d, nil
}

// throughput runs call from conc goroutines for dur and returns the calls
// completed and the time they took.
func throughput(ctx context.Context, s subject, conc int, dur time.Duration) (int64, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := s.call(ctx); err != nil {
					if ctx.Err() == nil {
						once.Do(func() { firstErr = err })
					}
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return done.Load(), time.Since(t0), firstErr
}

// measure takes each subject's p50 and p99 at concurrency 1 and its calls
// per second at o.conc. The subjects take turns: o.rounds rounds, each
// running every subject for its share of o.n calls and of o.dur, so that
// a change in the machine's speed during the run (other tenants of the
// host) falls on all of them alike and the ratios stay comparable. Every
// other round runs them in reverse order, so that no subject always goes
// first (or always after the same one), and each phase starts after a
// collection, so that none pays for the garbage of the one before.
func measure(ctx context.Context, subjects []subject, o benchOpts) ([]figures, error) {
	rounds := max(o.rounds, 1)
	if o.profileDir != "" && rounds > 1 {
		return nil, fmt.Errorf("-profile-dir needs -rounds 1 (one profile per subject and phase)")
	}
	lat := make([][]time.Duration, len(subjects))
	calls := make([]int64, len(subjects))
	spent := make([]time.Duration, len(subjects))
	mallocs := make([]uint64, len(subjects))
	allocated := make([]uint64, len(subjects))
	cpu := make([]time.Duration, len(subjects))
	tails := make([]tail, len(subjects))
	idle := make([]idleTime, len(subjects))
	for _, s := range subjects {
		if err := s.warmup(ctx, o.warmup); err != nil {
			return nil, fmt.Errorf("%s: warm-up: %w", s.name, err)
		}
	}
	var before, after runtime.MemStats
	perRound := make([][]roundFigures, len(subjects))
	order := make([]int, len(subjects))
	for round := range rounds {
		for j := range order {
			order[j] = j
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, i := range order {
			s := subjects[i]
			stop, err := profile(o.profileDir, s.name+" latency")
			if err != nil {
				return nil, err
			}
			runtime.GC()
			runtime.ReadMemStats(&before)
			t0 := readTail()
			d, err := s.latency(ctx, max(o.n/rounds, 1))
			tails[i].add(t0, readTail())
			runtime.ReadMemStats(&after)
			stop()
			mallocs[i] += after.Mallocs - before.Mallocs
			allocated[i] += after.TotalAlloc - before.TotalAlloc
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			lat[i] = append(lat[i], d...)
			sortDurations(d)
			perRound[i] = append(perRound[i], roundFigures{p50: quantile(d, 0.50)})
		}
		for _, i := range order {
			s := subjects[i]
			stop, err := profile(o.profileDir, s.name+" throughput")
			if err != nil {
				return nil, err
			}
			runtime.GC()
			cpu0, idle0 := processCPU(), readIdle()
			n, took, err := s.throughput(ctx, o.conc, o.dur/time.Duration(rounds))
			cpu[i] += processCPU() - cpu0
			idle[i] = idle[i].add(idle0, readIdle())
			stop()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			calls[i] += n
			spent[i] += took
			perRound[i][round].rps = float64(n) / took.Seconds()
		}
	}
	out := make([]figures, len(subjects))
	for i := range subjects {
		sortDurations(lat[i])
		n := float64(max(len(lat[i]), 1))
		tails[i].finish()
		out[i] = figures{quantile(lat[i], 0.50), quantile(lat[i], 0.99), float64(calls[i]) / spent[i].Seconds(),
			float64(mallocs[i]) / n, float64(allocated[i]) / n, cpu[i] / time.Duration(max(calls[i], 1)), tails[i], perRound[i], idle[i].share()}
	}
	return out, nil
}

// idleTime adds up the Go runtime's idle and total processor time over
// phases.
type idleTime struct{ idle, total float64 }

// readIdle is the runtime's idle and total processor time so far.
func readIdle() idleTime {
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}, {Name: "/cpu/classes/total:cpu-seconds"}}
	metrics.Read(s)
	return idleTime{s[0].Value.Float64(), s[1].Value.Float64()}
}

func (t idleTime) add(before, after idleTime) idleTime {
	return idleTime{t.idle + after.idle - before.idle, t.total + after.total - before.total}
}

func (t idleTime) share() float64 { return t.idle / max(t.total, 1e-9) }

// processCPU is the CPU time this process has used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// profile starts a CPU profile into dir/<name>.prof (name made a file name) when dir is set; the
// returned func stops it.
func profile(dir, name string) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	slug := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(name)), "-")
	f, err := os.Create(filepath.Join(dir, slug+".prof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func printTable(title string, subjects []subject, f []figures, o benchOpts) {
	conc := o.conc
	fmt.Println(title)
	fmt.Printf("   subjects take turns in %d rounds: %d calls each one after another, %s each at concurrency %d\n",
		max(o.rounds, 1), o.n/max(o.rounds, 1)*max(o.rounds, 1), o.dur, conc)
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "subject\tp50\tp99\tp50 ×direct\tp99 ×direct\treq/s @%d\treq/s %% of direct\t\n", conc)
	for i, s := range subjects {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%.2f\t%.0f\t%.0f%%\t\n", s.name,
			round(f[i].p50), round(f[i].p99),
			float64(f[i].p50)/float64(f[0].p50), float64(f[i].p99)/float64(f[0].p99),
			f[i].rps, 100*f[i].rps/f[0].rps)
	}
	tw.Flush()
	fmt.Println()
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	case d > 10*time.Microsecond:
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Nanosecond)
}

func drain(resp *http.Response, err error) error {
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// quantile returns the q-quantile (0..1) of sorted d by the nearest-rank
// rule used throughout: index len*q, clamped.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)) * q)
	return sorted[min(i, len(sorted)-1)]
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

// verdict says whether v is within target.
func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// spread is the median and range of a subject's per-round ratios to
// another's.
type spread struct{ median, lo, hi float64 }

func (s spread) String() string {
	return fmt.Sprintf("%.3f [%.3f–%.3f]", s.median, s.lo, s.hi)
}

// perRoundRatios returns a's p50 over b's and a's calls/s over b's, round
// by round: each ratio compares the two on the same machine at nearly the
// same moment, which the totals of a run do not on a shared host.
func perRoundRatios(a, b figures) (p50, rps spread) {
	n := min(len(a.perRound), len(b.perRound))
	p, r := make([]float64, n), make([]float64, n)
	for i := range n {
		p[i] = float64(a.perRound[i].p50) / float64(b.perRound[i].p50)
		r[i] = a.perRound[i].rps / b.perRound[i].rps
	}
	return spreadOf(p), spreadOf(r)
}

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{}
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	return spread{median: m, lo: v[0], hi: v[len(v)-1]}
}
