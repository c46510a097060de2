// Package core holds the distributed synchronization primitives, written
// once against package driver and so usable through every client adapter in
// drivers/.
//
// # Modes
//
// A Client over one node holds a lock when that node grants it. A Client
// over N independent masters runs Redlock: every attempt goes to all nodes
// at once, each request bounded by a node timeout much smaller than the TTL;
// the lock is held when a majority (N/2+1) granted it and its validity,
// TTL − elapsed − drift (elapsed measured from before the first request,
// drift = TTL × factor + 2ms), is still positive. A failed attempt is undone
// on every node, including those that did not answer.
//
// # Release and extension
//
// Unlock is compare-and-delete and Extend compare-and-set on the lease's
// random token, so only the holder can release or extend, and a lease that
// expired can never touch the next holder's key. Each node is probed once
// for native commands (Valkey 9 DELIFEQ, Redis 8.4 DELEX ... IFEQ, SET ...
// IFEQ on Redis 8.4 and Valkey 8.1) and falls back to a Lua script where the
// server lacks them.
//
// # Fencing tokens
//
// Every acquisition draws a token from a per-name counter (the key
// "<prefix>{name}:fence", which never expires) in the same script that
// grants it. Claim: if lease A's validity window ends before lease B is
// granted, Token(A) < Token(B).
//
// On one node this is immediate: the counter is incremented atomically with
// every grant. With N nodes, B's token is the maximum of the counters on
// the nodes that granted B, each incremented at B's grant. Before Lock
// returns A, A's token T is made durable: on the nodes that granted A,
// a script raises the counter to at least T, but only where A still holds
// the lock, and A is returned only if a majority M of nodes did so and
// validity is still left. B is granted by a majority too, which meets M in
// at least one node n. On n, A's key existed when its counter was raised
// to T, and B could be granted only after that key was gone, so B's
// increment on n came after the raise: B's counter on n, and hence B's
// token, exceeds T. Taking the plain maximum without this step is not
// enough: the maximum may come from a node outside the overlap. The step
// is skipped when every node that granted A drew T itself: its counter
// reached T in the script that granted A, while A's key existed, which is
// all the argument needs. Counters that move in step (every acquisition
// reaches every node) make this the usual case.
//
// Assumptions: a node keeps its data (the counter) across restarts, or
// stays down for longer than the TTL after losing it and is not counted
// until then; clocks advance at nearly the same rate (the drift factor
// bounds the difference); and the validity window is respected by the
// caller, which is what Lease.Until and Lease.Done are for. WithFencing(false)
// drops the extra round trip (when one is needed) and with it the
// guarantee across holders.
//
// A reentrant acquisition (WithOwner) also draws a fresh, larger token: use
// the newest token for fenced writes.
//
// # Waiting
//
// Lock waits through the Client's wait strategy: keyspace notifications
// (Notify, the default, RESP3 only) or backoff with full jitter (Poll).
// Every call that can block takes a context; its cancellation is reported
// as the context's error, distinct from ErrNotAcquired.
//
// Under Notify a Mutex waiter queues in Redis: its failed attempt adds a
// ticket key of its own, holding its token and TTL, to the lock's queue. A
// release hands the lock to the oldest live waiter: it sets the lock to
// that waiter's token and tells that waiter's Client the new fencing token
// on the Client's own channel, which it subscribes once per node. So a
// release wakes one waiter among
// all processes, no one barges in before it, and waiters are served in
// arrival order. Once a majority of nodes granted it, with one fencing
// token, the waiter holds the lock with no request of its own (its
// validity counts from its last attempt, before the grants); otherwise it
// confirms the grants with an attempt, as any acquisition. (A reentrant
// waiter, WithOwner, gets the lock reserved for a moment instead, at most
// 200ms or half the TTL, and takes it with an attempt.) A waiter that
// gives up passes on a grant it got meanwhile. The waiter at the head of
// the queue also listens to the lock key itself, so that a holder that
// dies wakes it at its TTL, and a DEL from elsewhere at once; the others
// retry at the holder's TTL, when their tickets expire. A waiter that crashes
// with a ticket still live may be granted the lock; it then frees at the
// waiter's TTL, as if the waiter had crashed holding it.
//
// Releasing through this queue takes a script: under Notify, Unlock does
// not use the native compare-and-delete commands, which cannot wake the
// next waiter. A Poll client releasing a lock that Notify clients wait on
// does not wake them; they retry at the holder's TTL.
package core
