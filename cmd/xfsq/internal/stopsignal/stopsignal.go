// Package stopsignal is how a signal stops an xfsq command: SIGINT or
// SIGTERM cancels the command's context with the signal as its cause, so
// that the command says so and exits 128+signal, as a shell would.
//
// It only cancels: it never opens the root, the store or a backend, and
// decides nothing about what a cancelled command leaves behind.
package stopsignal

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// Interrupted is the cause of a command's context cancelled by a signal.
type Interrupted struct{ Signal syscall.Signal }

func (i Interrupted) Error() string { return "interrupted (" + unix.SignalName(i.Signal) + ")" }

// Context is cancelled with Interrupted as its cause at SIGINT or
// SIGTERM; stop releases the signals and cancels it.
func Context() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(Interrupted{s.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() { signal.Stop(sigs); close(done); cancel(nil) }
}
