package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// testLostReplyNotSentAgain: the connection to a node breaks after the
// node ran a script call and before its reply came back. The driver must
// not send the call again on another connection, as a client that
// retries on a broken connection does by default (go-redis, 3 retries):
// a script runs once per call. A Latch's CountDown shows it, as it counts
// once more each time it runs. The call fails with ErrNoQuorum (nothing
// tells whether it landed), and the count went down by one at most.
func testLostReplyNotSentAgain(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	addr, loseReplies := testenv.LossyProxy(t, e.addrs[0])
	c := e.clientOn(t, []string{addr}, core.WithNodeTimeout(2*time.Second))
	l := c.Latch(n, core.WithLatchExpiry(time.Minute))
	if _, err := l.TrySetCount(ctx, 6); err != nil {
		t.Fatal(err)
	}
	// Once with its reply: the server knows the script by its SHA1 then,
	// so that the next call runs it (a NOSCRIPT reply would be lost).
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	// The connection breaks 20ms after the reply was lost; the proxy
	// heals before a client's retry, 10ms or more after that (go-redis's
	// least backoff), would reach it.
	heal := loseReplies(20 * time.Millisecond)
	counted := make(chan error, 1)
	go func() { counted <- l.CountDown(ctx) }()
	time.Sleep(22 * time.Millisecond)
	heal()
	if err := <-counted; err != nil && !errors.Is(err, core.ErrNoQuorum) {
		t.Fatalf("CountDown whose reply was lost: got %v, want ErrNoQuorum (or nil)", err)
	}
	count, err := e.clientOn(t, e.addrs[:1]).Latch(n).Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 5: the call broke before it was sent, which proves nothing but is
	// no failure either.
	if count < 4 {
		t.Fatalf("CountDown from 6 twice, the second's reply lost with its connection: count %d, want 4 (the driver sent the second %d times)", count, 5-count)
	}
}
