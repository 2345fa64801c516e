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
	"time"

	"github.com/imagebump/imagebump/internal/stopsignal"
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
// (a SIGTERM within stopsignal.Window of the first is that one, sent twice)
// with exit code 1 (a failure, as SPEC.md's codes have it), after saying so
// on stderr: what was running is abandoned (writes are atomic, pushes
// all-or-nothing, so nothing is left half-done). stop releases the signals.
//
// SIGPIPE is caught too, and dropped: a write to a closed stdout or stderr
// (imagebump demo | head) then fails with EPIPE instead of ending the
// process where it stands, and Main's writers stop the command on that
// failure (outputWriter), so that it removes its temporary folders. A
// SIGPIPE from a network connection's write is dropped, as Go does by
// default.
func SignalContext(parent context.Context, stderr io.Writer) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// Never read: signal drops what a full channel cannot take.
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
			cancel(&InterruptedError{Signal: first})
		case <-done:
			return
		}
		at := time.Now()
		for {
			select {
			case sig := <-sigs:
				if stopsignal.Repeated(first, sig, time.Since(at)) {
					continue // the same request, delivered twice
				}
				fmt.Fprintln(stderr, "imagebump: second signal: exiting at once")
				os.Exit(ExitFailure)
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		signal.Stop(pipes)
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

// errOutputClosed is the cause of a command's cancellation when whoever
// read its stdout or stderr went away (head, once it has its lines).
var errOutputClosed = errors.New("standard output or standard error was closed (broken pipe)")

// outputWriter is stdout or stderr as a command gets it: a write that
// fails because the reader closed the pipe (EPIPE) cancels the command's
// context with errOutputClosed, so that it stops as on a signal, and its
// deferred clean-up (the demo's folder, a clone's) runs.
type outputWriter struct {
	w      io.Writer
	cancel context.CancelCauseFunc
}

// Write writes p to the writer, and stops the command on EPIPE.
func (o *outputWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		o.cancel(errOutputClosed)
	}
	return n, err
}

// outputClosed reports whether ctx was cancelled because stdout or stderr
// was closed.
func outputClosed(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errOutputClosed)
}

// underlying returns the writer an outputWriter wraps, or w itself.
func underlying(w io.Writer) io.Writer {
	if o, ok := w.(*outputWriter); ok {
		return o.w
	}
	return w
}
