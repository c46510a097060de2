package core

import (
	"context"
	"errors"
)

// Do runs fn while holding m, kept by the watchdog whatever m's options.
// fn's context is cancelled, with cause ErrLost, as soon as the lock is
// lost (under Notify, within milliseconds of its key's removal: see
// Lease.Done for what that costs); Do then returns fn's error joined with
// ErrLost. The lock is released when fn returns.
func Do(ctx context.Context, m *Mutex, fn func(ctx context.Context) error) error {
	if m == nil || fn == nil {
		return invalid("Do needs a Mutex and a function")
	}
	watched := *m
	watched.opts.autoExtend = true
	l, err := watched.Lock(ctx)
	if err != nil {
		return err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	watcher := make(chan struct{})
	go func() {
		defer close(watcher)
		select {
		case <-l.Done():
			cancel(l.Err())
		case <-fctx.Done():
		}
	}()
	ferr := fn(fctx)
	uerr := l.Unlock(context.WithoutCancel(ctx))
	cancel(nil)
	<-watcher
	return errors.Join(ferr, uerr)
}
