package line

import (
	"testing"
	"time"
)

// A keyspace event wakes one waiter of a Client; each woken waiter that
// passes the wake-up on when it leaves wakes the next, so that a latch's
// opening reaches every waiter, one after another.
func TestPassOnWakesTheNext(t *testing.T) {
	n, f, o := newFakeNotifier(t)
	ws := []*waiting{startWaiting(t, n, o, "k"), startWaiting(t, n, o, "k"), startWaiting(t, n, o, "k")}
	time.Sleep(20 * time.Millisecond) // all blocked in wait
	f.event("k", "del")
	for i, w := range ws {
		if !w.woken(time.Second) {
			t.Fatalf("waiter %d was not woken", i)
		}
		if i+1 < len(ws) && ws[i+1].woken(50*time.Millisecond) {
			t.Fatalf("waiter %d was woken before waiter %d passed the wake-up on", i+1, i)
		}
		w.w.stop()
		n.PassOn("k")
	}
	n.PassOn("k") // no waiter left: nothing to wake, nothing to block on
}
