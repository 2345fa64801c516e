package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// InterruptedError is the cause of the root context's cancellation when a
// signal stops imagebump.
type InterruptedError struct {
	Signal os.Signal
}

func (e *InterruptedError) Error() string {
	name := "SIGINT"
	if e.Signal == syscall.SIGTERM {
		name = "SIGTERM"
	}
	return "interrupted by " + name
}

// SignalContext returns a context that SIGINT or SIGTERM cancels with an
// *InterruptedError as its cause. A second signal ends the process at once
// with exit code 1 (a failure, as SPEC.md's codes have it), after saying so
// on stderr: what was running is abandoned (writes are atomic, pushes
// all-or-nothing, so nothing is left half-done). stop releases the signals.
func SignalContext(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			cancel(&InterruptedError{Signal: sig})
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintln(stderr, "imagebump: second signal: exiting at once")
			os.Exit(ExitFailure)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// describe renders err for a user: when a signal cancelled ctx, the
// libraries' "context canceled" becomes what happened.
func describe(ctx context.Context, err error) string {
	msg := err.Error()
	var ie *InterruptedError
	if errors.As(context.Cause(ctx), &ie) {
		msg = strings.ReplaceAll(msg, context.Canceled.Error(), ie.Error())
	}
	return msg
}
