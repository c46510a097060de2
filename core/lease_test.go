package core

import (
	"errors"
	"testing"
	"time"
)

// A lease whose expiry timer has not run at its validity deadline (a busy
// machine schedules timers late) reports itself lost all the same.
func TestErrFollowsTheClockNotTheTimer(t *testing.T) {
	c := newTestClient(t)
	c.evictionOnce.Do(func() {}) // no servers to ask
	l := newLease(c, newLeaseNames(options{}, "n"), options{}, nil, 1)
	l.start(time.Now().Add(20 * time.Millisecond))
	l.mu.Lock()
	l.expiry.Stop() // the timer runs late
	l.mu.Unlock()
	if err := l.Err(); err != nil {
		t.Fatalf("before the deadline: Err() = %v, want nil", err)
	}
	time.Sleep(30 * time.Millisecond)
	if err := l.Err(); !errors.Is(err, ErrLost) {
		t.Fatalf("past the deadline, the timer not run: Err() = %v, want ErrLost", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("past the deadline: Done is open")
	}
}
