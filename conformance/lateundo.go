package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// exclusiveLock is how the late-undo and late-attempt cases take one
// exclusive primitive: lock takes name through c (try makes one
// attempt), acquire is the
// operation of package spec that a waiter's attempt calls and undo those
// its undo may call, key is the key on each node that holds the lease,
// and line the waiters' line. A Client's first Lock under Notify of a
// Mutex or MultiLock (late) joins the line at its second attempt.
type exclusiveLock struct {
	lock    taker
	try     taker
	acquire string
	undo    []string
	key     func(name string) string
	line    func(name string) string
	late    bool
	// holder, when not nil, takes a lease that keeps lock waiting (else
	// lock does): a writer's, for a read lease.
	holder taker
}

// mutexUndo are the operations that undo a Mutex attempt: a plain
// release, or one that wakes the next waiter.
var mutexUndo = []string{"Release", "ReleaseWake"}

var exclusiveLocks = map[string]exclusiveLock{
	"Mutex": {
		lock: waitMutex, try: tryMutex,
		acquire: "MutexAcquire", undo: mutexUndo, key: lockKey,
		line: queueKey, late: true,
	},
	// A reentrant lock: the waiter's owner, "waiter", is not the holder's.
	"MutexOwned": {
		lock:    takerOf((*core.Client).Mutex, (*core.Mutex).Lock, core.WithOwner("waiter")),
		try:     takerOf((*core.Client).Mutex, (*core.Mutex).TryLock, core.WithOwner("waiter")),
		acquire: "MutexAcquireOwned", key: lockKey,
		line: queueKey, late: true,
		holder: takerOf((*core.Client).Mutex, (*core.Mutex).Lock, core.WithOwner("holder")),
	},
	"FairMutex": {
		lock: waitFair, try: tryFair,
		acquire: "FairMutexAcquire", undo: []string{"FairMutexRelease"}, key: func(n string) string { return fairKey(n, "") },
		line: func(n string) string { return fairKey(n, ":q") },
	},
	// A reentrant one: the waiter's owner, "waiter", is not the holder's.
	"FairMutexOwned": {
		lock:    takerOf((*core.Client).FairMutex, (*core.FairMutex).Lock, core.WithOwner("waiter")),
		try:     takerOf((*core.Client).FairMutex, (*core.FairMutex).TryLock, core.WithOwner("waiter")),
		acquire: "FairMutexAcquire", undo: []string{"FairMutexRelease"}, key: func(n string) string { return fairKey(n, "") },
		line:   func(n string) string { return fairKey(n, ":q") },
		holder: takerOf((*core.Client).FairMutex, (*core.FairMutex).Lock, core.WithOwner("holder")),
	},
	"RWMutex": {
		lock: waitWriter, try: tryWriter,
		acquire: "RWMutexWriteAcquire", undo: []string{"RWMutexRelease"}, key: func(n string) string { return rwKey(n, ":w") },
		line: func(n string) string { return rwKey(n, ":wq") },
	},
	// A reentrant write lock: the waiter's owner, "waiter", is not the holder's.
	"RWMutexOwned": {
		lock:    takerOf((*core.Client).RWMutex, (*core.RWMutex).Lock, core.WithOwner("waiter")),
		try:     takerOf((*core.Client).RWMutex, (*core.RWMutex).TryLock, core.WithOwner("waiter")),
		acquire: "RWMutexWriteAcquire", undo: []string{"RWMutexRelease"}, key: func(n string) string { return rwKey(n, ":w") },
		line:   func(n string) string { return rwKey(n, ":wq") },
		holder: takerOf((*core.Client).RWMutex, (*core.RWMutex).Lock, core.WithOwner("holder")),
	},
	// A read lease: shared, so only for the cases of late attempts.
	"RWMutexRead": {
		lock: waitReader, try: tryReader,
		acquire: "RWMutexReadAcquire", undo: []string{"RWMutexRelease"}, key: func(n string) string { return rwKey(n, ":r") },
		line:   func(n string) string { return rwKey(n, ":rq") },
		holder: waitWriter,
	},
	"MultiLock": {
		// The names' first (in order) is the one the attempts stop at.
		lock: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.MultiLock([]string{n, n + "/2"}).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.MultiLock([]string{n, n + "/2"}).TryLock(ctx)
		},
		acquire: "MultiLockAcquire", undo: []string{"MultiLockRelease"}, key: lockKey,
		line: queueKey, late: true,
	},
	// An owner's MultiLock, waiting behind another owner's Mutex of its
	// first name.
	"MultiLockOwned": {
		lock: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.MultiLock([]string{n, n + "/2"}, core.WithOwner("waiter")).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.MultiLock([]string{n, n + "/2"}, core.WithOwner("waiter")).TryLock(ctx)
		},
		acquire: "MutexAcquireOwned", key: lockKey,
		line: queueKey, late: true,
		holder: takerOf((*core.Client).Mutex, (*core.Mutex).Lock, core.WithOwner("holder")),
	},
	"Semaphore": {
		// One permit: as exclusive as a lock.
		lock: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.Semaphore(n, 1).Acquire(ctx, 1)
		},
		try: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.Semaphore(n, 1).TryAcquire(ctx, 1)
		},
		acquire: "SemaphoreAcquire", undo: []string{"SemaphoreRelease"}, key: func(n string) string { return semKey(n, "") },
		line: func(n string) string { return semKey(n, ":q") },
	},
}

// testLateUndoSparesGrant: a waiter's failed attempts are undone on the
// nodes whose call failed, and those undos are delayed, one node per
// attempt, until a majority of nodes has one in flight. The lock is then
// released and the waiter holds it; the undos land. A waiter that kept
// its token across attempts would see them delete its lease on a
// majority while it believes it holds the lock: the undo of an earlier
// attempt must never take a later grant.
func testLateUndoSparesGrant(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		quorum := len(e.addrs)/2 + 1
		var mu sync.Mutex
		armed := make([]bool, len(e.addrs)) // the node's attempt failed; its undo is next
		delayed := 0
		allDelayed := make(chan struct{})
		c, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
			mu.Lock()
			defer mu.Unlock()
			k := call.Node
			switch {
			case k >= quorum:
			case call.Op == x.acquire && call.N == k+1:
				armed[k] = true // attempt k+1 fails on node k alone
				return faults.Fault{Kind: faults.LoseReply}
			case slices.Contains(x.undo, call.Op) && armed[k]:
				armed[k] = false
				if delayed++; delayed == quorum {
					close(allDelayed)
				}
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(10*time.Second), core.WithNodeTimeout(time.Second)) // no timeout of a loaded machine fails an attempt
		// The holder's lock lives a second and is extended: a waiter
		// that waits for it to expire attempts again within a second.
		holder, err := x.lock(ctx, e.client(t, core.WithTTL(time.Second), core.WithAutoExtend()), n)
		if err != nil {
			t.Fatalf("the first holder's Lock: %v", err)
		}
		type result struct {
			l   *core.Lease
			err error
		}
		waited := make(chan result, 1)
		go func() {
			l, err := x.lock(ctx, c, n)
			waited <- result{l, err}
		}()
		select {
		case <-allDelayed:
		case r := <-waited:
			t.Fatalf("the waiter's Lock returned (%v) before its undos were delayed on %d nodes", r.err, quorum)
		case <-ctx.Done():
			t.Fatalf("the waiter's attempts did not fail on %d nodes in turn: %d undos delayed", quorum, delayed)
		}
		if err := holder.Unlock(ctx); err != nil {
			t.Fatalf("the first holder's Unlock: %v", err)
		}
		r := <-waited
		if r.err != nil {
			t.Fatalf("the waiter's Lock after the release: %v", r.err)
		}
		defer r.l.Unlock(ctx)
		flush(fds)
		held := 0
		for i := range e.addrs {
			if v, err := e.admin(t, i).Exists(ctx, x.key(n)).Result(); err == nil && v == 1 {
				held++
			}
		}
		if left := time.Until(r.l.Until()); r.l.Err() != nil || left <= 0 {
			t.Fatalf("the lease ended before the check (%v, %v left): the check proves nothing", r.l.Err(), left)
		}
		if held < quorum {
			t.Fatalf("after its earlier attempts' undos landed, %d of %d nodes hold the lock of a lease valid for %v more: another client can take it",
				held, len(e.addrs), time.Until(r.l.Until()).Round(time.Millisecond))
		}
	}
}
