package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// subject is one way of making the same call.
type subject struct {
	name string
	call func(ctx context.Context) error
}

type figures struct {
	p50, p99 time.Duration
	rps      float64
}

// latency runs call n times one after another and returns p50 and p99.
func latency(ctx context.Context, s subject, o benchOpts) (p50, p99 time.Duration, err error) {
	for i := 0; i < o.warmup; i++ {
		if err := s.call(ctx); err != nil {
			return 0, 0, err
		}
	}
	d := make([]time.Duration, o.n)
	for i := range d {
		t0 := time.Now()
		if err := s.call(ctx); err != nil {
			return 0, 0, err
		}
		d[i] = time.Since(t0)
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2], d[len(d)*99/100], nil
}

// throughput runs call from conc goroutines for dur and returns calls/s.
func throughput(ctx context.Context, s subject, o benchOpts) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, o.dur)
	defer cancel()
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < o.conc; i++ {
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
	return float64(done.Load()) / time.Since(t0).Seconds(), firstErr
}

func measure(ctx context.Context, subjects []subject, o benchOpts) ([]figures, error) {
	out := make([]figures, len(subjects))
	for i, s := range subjects {
		p50, p99, err := latency(ctx, s, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		rps, err := throughput(ctx, s, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		out[i] = figures{p50, p99, rps}
	}
	return out, nil
}

func printTable(title string, subjects []subject, f []figures, conc int) {
	fmt.Println(title)
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
