package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/redlockgo/redlock/core"
)

// A history is what competing Clients saw of one primitive: every
// operation with the client that made it, its input and output, and when
// it was called and returned. check then asks porcupine whether some order
// of the operations, each taking effect between its call and its return,
// is allowed by a sequential model of the primitive (models.go). Outcome
// checks see one run's end state; a history also catches two holders
// that overlapped for a moment and then both released cleanly.
//
// Leases end by release or by expiry. A holder may rely on its lease from
// the return of its acquisition until the earlier of its release call and
// its validity deadline (Lease.Until), so that is the window recorded: the
// end of a lease is an operation called at min(release call, deadline).
// Another holder's acquisition must then return after that point, which is
// exactly "no two validity windows overlap".
type history struct {
	start time.Time
	taken atomic.Int64 // the acquisitions take recorded

	mu    sync.Mutex
	ops   []porcupine.Operation
	trace []string // what the clients did and the faults they met, for a failure's log
}

// tracef notes what client did, at the time since the history began.
func (h *history) tracef(client int, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.trace = append(h.trace, fmt.Sprintf("%9s client %d: ", h.since(time.Now()), client)+fmt.Sprintf(format, args...))
}

// logTrace logs the trace, in order.
func (h *history) logTrace(t testing.TB) {
	h.mu.Lock()
	defer h.mu.Unlock()
	slices.Sort(h.trace)
	t.Logf("trace of the schedule:\n%s", strings.Join(h.trace, "\n"))
}

// since is t in milliseconds since the history began, for a trace.
func (h *history) since(t time.Time) string {
	return fmt.Sprintf("%.1fms", float64(t.Sub(h.start).Microseconds())/1000)
}

func newHistory() *history { return &history{start: time.Now()} }

// compete runs clients goroutines at once, each calling round(i, r) for
// r = 0, 1, … until it returns false or an error, and fails t with the
// errors: the competing Clients of a history.
func compete(t *testing.T, clients int, round func(i, r int) (bool, error)) {
	t.Helper()
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for r := 0; ; r++ {
				more, err := round(i, r)
				if err != nil {
					errs <- err
				}
				if err != nil || !more {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// take runs lock for client i and records the lease it returns as op. ok
// is false for an acquisition the history leaves out, as under Redlock a
// failed one says nothing about the lock (see models.go): a Try call that
// did not win, or ErrNoQuorum, a node slow to answer on a loaded machine.
func (h *history) take(ctx context.Context, i int, op leaseOp, try bool, lock func(context.Context) (*core.Lease, error)) (l *core.Lease, held *holding, ok bool, err error) {
	call := time.Now()
	l, err = lock(ctx)
	if (errors.Is(err, core.ErrNotAcquired) && try) || errors.Is(err, core.ErrNoQuorum) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, err
	}
	h.taken.Add(1)
	return l, h.acquired(i, op, call, l), true, nil
}

// add records one operation of client over [call, ret].
func (h *history) add(client int, in, out any, call, ret time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{
		ClientId: client, Input: in, Output: out,
		// The monotonic clock: every client runs in this process.
		Call: int64(call.Sub(h.start)), Return: int64(ret.Sub(h.start)),
	})
}

// count returns how many operations satisfy keep.
func (h *history) count(keep func(in any) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, op := range h.ops {
		if keep(op.Input) {
			n++
		}
	}
	return n
}

// checkCount fails the test when fewer than want acquisitions were
// recorded: too few to check.
func (h *history) checkCount(t *testing.T, want int64) {
	t.Helper()
	taken := func(in any) bool { // an acquired lease, or a Wait that returned
		op, ok := in.(leaseOp)
		return ok && !op.End || in == latchOp{Wait: true}
	}
	if got := h.count(taken); int64(got) < want {
		t.Fatalf("only %d acquisitions recorded, want at least %d", got, want)
	}
}

// leaseOp is the input of the lease models: a lease taken or ended.
type leaseOp struct {
	End     bool   // the lease ended (released, or its validity ran out)
	Expired bool   // with End: the validity deadline came before any release call
	Mode    string // an RWMutex lease: "read" or "write"
	Names   string // a MultiLock lease: its names, sorted, comma-separated
	Permits int    // a Semaphore lease: permits held (1 when zero)
}

func (o leaseOp) permits() int { return max(o.Permits, 1) }

// validity is what a lease handle tells about its window.
type validity interface{ Until() time.Time }

// holding is a lease recorded as taken, to be recorded as ended.
type holding struct {
	h      *history
	client int
	op     leaseOp
	l      validity
}

// acquired records that client's acquisition, called at call, returned
// the lease l now.
func (h *history) acquired(client int, op leaseOp, call time.Time, l validity) *holding {
	h.add(client, op, nil, call, time.Now())
	return &holding{h: h, client: client, op: op, l: l}
}

// unlock releases l, the lease hd records, and returns the error of a
// release that did not end the lease (see released).
func (hd *holding) unlock(ctx context.Context, l *core.Lease) error {
	if err := hd.release(func() error { return l.Unlock(ctx) }); !released(err) {
		return err
	}
	return nil
}

// release calls unlock and records the end of the lease's window: the
// release call, or the validity deadline if that came first. It returns
// unlock's error.
func (hd *holding) release(unlock func() error) error {
	call, until := time.Now(), hd.l.Until()
	err := unlock()
	hd.end(call, until, time.Now())
	return err
}

// expired records a lease that was never released: its window ended at
// its validity deadline. Call it once the deadline has passed.
func (hd *holding) expired() {
	until := hd.l.Until()
	hd.end(until, until, until)
}

func (hd *holding) end(call, until, ret time.Time) {
	op := hd.op
	op.End = true
	if until.Before(call) {
		op.Expired, call = true, until
	}
	hd.h.add(hd.client, op, nil, call, ret)
}

// checkTimeout bounds porcupine's search, which is exponential at worst;
// the histories here are checked in milliseconds.
const checkTimeout = 30 * time.Second

// check fails t when no order of the recorded operations is allowed by
// model, writing porcupine's visualisation (an HTML file) and printing its
// path.
func (h *history) check(t testing.TB, model porcupine.Model) {
	t.Helper()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	switch res {
	case porcupine.Ok:
		return
	case porcupine.Unknown:
		t.Errorf("checking a history of %d operations timed out after %v: neither shown linearizable nor not", len(ops), checkTimeout)
		return
	}
	path, err := visualize(t, model, info)
	if err != nil {
		path = fmt.Sprintf("(not written: %v)", err)
	}
	t.Errorf("the history of %d operations is not linearizable: no order of them is allowed by the model; visualisation: %s", len(ops), path)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// visualize writes porcupine's visualisation to a file that outlives the
// test (t.TempDir would remove it) and returns its path.
func visualize(t testing.TB, model porcupine.Model, info porcupine.LinearizationInfo) (string, error) {
	f, err := os.CreateTemp("", "redlock-history-"+unsafeChars.ReplaceAllString(t.Name(), "_")+"-*.html")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := porcupine.Visualize(model, info, f); err != nil {
		return "", err
	}
	return filepath.Abs(f.Name())
}
