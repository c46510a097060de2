package quorum

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// TestNeverSentIsNotUndone: an attempt that reached no server (its node
// refused the connection) is not undone: there is nothing to take back,
// and an undo would fail the same way and go on in the background, one
// retry loop per attempt for as long as the node is down.
func TestNeverSentIsNotUndone(t *testing.T) {
	g, err := NewGroup([]driver.Driver{replyDriver{}, replyDriver{}, replyDriver{}}, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	var undone [3]atomic.Int32
	r := Round[bool]{
		Group:  g,
		Timing: Timing{TTL: 10 * time.Second, NodeTimeout: 50 * time.Millisecond, DriftFactor: 0.01},
		Ask: func(_ context.Context, i int, _ *Node) (bool, error) {
			if i == 0 {
				return true, nil
			}
			return false, refused
		},
		Granted: func(v bool) bool { return v },
		Tally: func(rs []Reply[bool]) Outcome[bool] {
			return Outcome[bool]{Wins: func(r Reply[bool]) bool { return r.Err == nil && r.V }}
		},
		MayHold: func(r Reply[bool]) bool { return r.Err != nil || r.V },
		Undo: func(_ context.Context, n *Node, _ Reply[bool]) (bool, error) {
			undone[n.Index].Add(1)
			if n.Index == 0 {
				return true, nil
			}
			return false, refused
		},
	}
	p := r.Play(context.Background())
	if p.Won || !errors.Is(p.Err, ErrNoQuorum) {
		t.Fatalf("a round granted on 1 of 3 nodes, 2 refusing connections: won %v, %v; want ErrNoQuorum", p.Won, p.Err)
	}
	time.Sleep(200 * time.Millisecond) // the background retries, if any, ran a few times
	if got := [3]int32{undone[0].Load(), undone[1].Load(), undone[2].Load()}; got != [3]int32{1, 0, 0} {
		t.Fatalf("undos per node %v, want [1 0 0]: the node that granted is undone once, those that refused the connection never", got)
	}
}
