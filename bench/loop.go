package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"text/tabwriter"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/plugins"
)

// timedTransport adds up the time spent in round trips, the response body
// read to its end included: what the model or the upstream costs, network
// and server side. The body is handed on from memory, so that the engine's
// decoding of it is counted as the engine's own time.
type timedTransport struct {
	next  http.RoundTripper
	ns    atomic.Int64
	calls atomic.Int64
}

func (t *timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t0 := time.Now()
	resp, err := readThrough(t.next, r)
	t.ns.Add(int64(time.Since(t0)))
	t.calls.Add(1)
	return resp, err
}

// readThrough makes the round trip and reads the body to its end, handing
// it on from memory.
func readThrough(next http.RoundTripper, r *http.Request) (*http.Response, error) {
	resp, err := next.RoundTrip(r)
	if err == nil {
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if rerr != nil {
			resp, err = nil, rerr
		}
	}
	return resp, err
}

// take returns the time added up since the last take and resets it.
func (t *timedTransport) take() time.Duration { return time.Duration(t.ns.Swap(0)) }

// benchLoop measures the engine's own time per loop step: runs of seed
// 001's turn (the model calls search_company_basic, the engine executes it
// against a loopback upstream, the model answers) timed from the outside,
// minus the time spent in the model's and the upstream's round trips,
// each measured by a timing transport. A step is one model call and the
// tool calls it asked for (what options.max_steps counts): this run has
// two, the tool step and the answer step.
func benchLoop(ctx context.Context, o benchOpts) error {
	return withTB(func(tb *benchTB) error { return benchLoopTB(ctx, o, tb) })
}

func benchLoopTB(ctx context.Context, o benchOpts, tb *benchTB) error {

	up := companyUpstream()
	defer up.Close()
	upT := &timedTransport{}
	e, err := newEnv(ctx, func(next http.RoundTripper) http.RoundTripper { upT.next = next; return upT })
	if err != nil {
		return err
	}
	defer e.close()
	p, err := plugins.Parse([]byte(companyPlugin(up.URL)))
	if err != nil {
		return err
	}

	model := openaitest.New(tb)
	cfg := model.Config() // loopback only (egresstest)
	modelT := &timedTransport{next: cfg.HTTPClient.(*http.Client).Transport}
	cfg.HTTPClient = &http.Client{Transport: modelT}
	runner := &loop.Runner{Client: loop.NewClient(cfg), Executor: e.ex, DefaultModel: "gpt-bench", LLMTimeout: 30 * time.Second}

	usage := openai.Usage{PromptTokens: 180, CompletionTokens: 24, TotalTokens: 204}
	answer := "北京字节跳动科技有限公司的法定代表人是张利东，成立于2012年3月9日。需要我继续查询它的股东或变更记录吗？"
	fmt.Println("== LLM loop: the engine's own time per step, model and upstream round trips excluded")
	fmt.Println("   (seed 001's turn: the scripted model calls search_company_basic, the engine executes it against a")
	fmt.Println("    loopback upstream with payload credentials and execution records on, the model answers; 2 steps a run)")
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "mode\truns\trun p50\tmodel+upstream p50\tengine/step p50\tengine/step p99\ttool step p50\ttool step p99\tanswer step p50\tanswer step p99\tengine share of run\t\n")
	for _, mode := range []struct {
		name   string
		stream bool
		chunk  int
	}{
		{"non-streaming", false, 0},
		{"streaming (4-rune deltas)", true, 4},
	} {
		req := loop.Request{
			UserID:      7,
			Messages:    []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "查一下字节跳动的工商信息"}},
			Plugins:     []*plugins.Plugin{p},
			Credentials: map[string]string{"QCC_KEY": "sk-bench-0123456789"},
			Options:     loop.Options{Stream: mode.stream},
		}
		var toolStep, answerStep, all []time.Duration
		var runSum, engineSum time.Duration
		var runs, outside []time.Duration
		one := func(record bool) error {
			model.Script(
				openaitest.Turn{ToolCalls: []openaitest.ToolCall{{Name: "search_company_basic", Arguments: `{"keyword":"字节跳动"}`}}, Usage: usage, Chunk: mode.chunk},
				openaitest.Turn{Content: answer, Usage: usage, Chunk: mode.chunk},
			)
			modelT.take()
			upT.take()
			var tMid time.Time
			var ext1 time.Duration
			emit := func(ev loop.Event) {
				if ev.Name == loop.EventToolCompleted {
					tMid = time.Now()
					ext1 = modelT.take() + upT.take()
				}
			}
			t0 := time.Now()
			reply := runner.Run(ctx, req, emit)
			tEnd := time.Now()
			ext2 := modelT.take() + upT.take()
			if reply.Status != loop.StatusCompleted || len(reply.Steps) != 1 || reply.Steps[0].Status != loop.StepOK || tMid.IsZero() {
				return fmt.Errorf("run ended %s with %d steps (%+v), error %v", reply.Status, len(reply.Steps), reply.Steps, reply.Error)
			}
			if n := model.Pending(); n != 0 {
				return fmt.Errorf("%d scripted turns left", n)
			}
			if !record {
				return nil
			}
			s1 := tMid.Sub(t0) - ext1
			s2 := tEnd.Sub(tMid) - ext2
			toolStep = append(toolStep, s1)
			answerStep = append(answerStep, s2)
			all = append(all, s1, s2)
			runs = append(runs, tEnd.Sub(t0))
			outside = append(outside, ext1+ext2)
			runSum += tEnd.Sub(t0)
			engineSum += s1 + s2
			return nil
		}
		for range o.warmup {
			if err := one(false); err != nil {
				return fmt.Errorf("%s: %w", mode.name, err)
			}
		}
		for range o.n {
			if err := one(true); err != nil {
				return fmt.Errorf("%s: %w", mode.name, err)
			}
		}
		for _, d := range [][]time.Duration{toolStep, answerStep, all, runs, outside} {
			sortDurations(d)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%\t\n", mode.name, o.n,
			round(quantile(runs, .5)), round(quantile(outside, .5)),
			round(quantile(all, .5)), round(quantile(all, .99)),
			round(quantile(toolStep, .5)), round(quantile(toolStep, .99)),
			round(quantile(answerStep, .5)), round(quantile(answerStep, .99)),
			100*float64(engineSum)/float64(runSum))
	}
	tw.Flush()
	fmt.Println("   engine time = run wall time − model round trips − upstream round trips (timed by wrapping transports,")
	fmt.Println("   bodies read to the end inside the timing); it includes go-openai's encoding and decoding, validation,")
	fmt.Println("   credential mapping, request building, response shaping and the execution record.")
	fmt.Println()
	return nil
}
