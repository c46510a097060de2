package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/redlockgo/redlock/driver"
)

// replyDriver is a single node whose error replies are serverErrors.
type replyDriver struct{ driver.Driver }

func (replyDriver) Name() string { return "fake" }
func (replyDriver) IsServerError(err error) bool {
	var se serverError
	return errors.As(err, &se)
}

// TestServerErrorEndsWait: a round in which one node answered with an
// error reply (WRONGTYPE) and a second node's replicas did not take its
// grant, while the third granted, is headed ErrServerError, which ends a
// waiting call at once, though a node's error wraps ErrReplicasBehind.
func TestServerErrorEndsWait(t *testing.T) {
	g, err := NewGroup([]driver.Driver{replyDriver{}, replyDriver{}, replyDriver{}}, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	replies := []Reply[bool]{
		{Err: serverError("WRONGTYPE Operation against a key holding the wrong kind of value")},
		{Err: fmt.Errorf("%w: 0 of 1 replicas acknowledged", ErrReplicasBehind)},
		{V: true},
	}
	got := NoQuorum(context.Background(), g, replies)
	if !errors.Is(got, ErrServerError) {
		t.Fatalf("NoQuorum: got %v, want ErrServerError", got)
	}
	if Retryable(got) || Outage(got) {
		t.Fatalf("a round headed ErrServerError is Retryable (%v) / an Outage (%v): a waiting Lock keeps waiting on an error reply instead of ending at once; the error:\n%v", Retryable(got), Outage(got), got)
	}
}
