package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopSignal is the cause of serve's context when a signal ended it.
type stopSignal struct{ os.Signal }

func (s stopSignal) Error() string { return "received " + s.Signal.String() }

// stopOnSignal is parent ended by the first SIGTERM or interrupt, its
// cause a stopSignal naming which (serve drains on SIGTERM only); the
// signals after it arrive on again. stop undoes it.
func stopOnSignal(parent context.Context) (ctx context.Context, again <-chan os.Signal, stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case s := <-sigs:
			cancel(stopSignal{s})
		case <-ctx.Done():
		}
	}()
	return ctx, sigs, func() {
		signal.Stop(sigs)
		cancel(nil)
	}
}

// drain is the phase between SIGTERM and the shutdown: stopping (the
// replica's /readyz answers 503) is called at once, and every request is
// still served for d, so that a load balancer polling /readyz takes the
// replica out of rotation before its listener closes. An interrupt
// (Ctrl-C: no load balancer to wait for), a second signal or d of 0
// skips it; served ends it early with the server's error.
func drain(ctx context.Context, d time.Duration, stopping func(), again <-chan os.Signal, served <-chan error, log *slog.Logger) error {
	var sig stopSignal
	if d <= 0 || !errors.As(context.Cause(ctx), &sig) || sig.Signal != syscall.SIGTERM {
		return nil
	}
	stopping()
	log.Info("SIGTERM: /readyz answers 503; serving on until the drain is over", "drain", d.String())
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case s := <-again:
		log.Info("drain cut short", "signal", s.String())
	case err := <-served:
		return err
	}
	return nil
}
