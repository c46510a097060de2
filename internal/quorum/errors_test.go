package quorum

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateTimer is a context whose deadline has passed while its timer has
// not fired yet, as a client's socket deadline can see it.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

func TestEndedBeforeTheTimerFires(t *testing.T) {
	ctx := lateTimer{context.Background(), time.Now().Add(-time.Millisecond)}
	if err := Ended(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ended past the deadline: got %v, want DeadlineExceeded", err)
	}
	if err := Ended(lateTimer{context.Background(), time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("ended before the deadline: got %v, want nil", err)
	}
}
