// Package core holds the distributed synchronization primitives, written
// once against package driver and so usable through every client adapter in
// drivers/. Each adapter is a module of its own (go get
// github.com/redlockgo/redlock/drivers/goredis, .../drivers/redigo or
// .../drivers/rueidis); the runnable examples of each primitive are the
// package examples of drivers/goredis.
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
// An acquisition attempt (of every primitive) and Extend do not wait out
// a stalled node (a paused server, or one behind a partition that drops
// packets): once a majority decided the round, the others get as long
// again as that took (at least a millisecond), and then finish in the
// background, where a failed attempt, or one whose lease has ended, is
// undone on a node once it answers. An attempt that a majority answered
// without deciding (some granted, some refused) gives the others a tenth
// of the node timeout to break the tie, then fails the same way and is
// tried again. A stalled minority thus costs those calls about one round
// trip instead of the node timeout. Unlock, the undo of a failed attempt
// and a waiter leaving the line wait for every node until the caller's
// context ends, so that afterwards the lock is free wherever a node
// answered; then they wait about as long as the majority took. Give Unlock
// a context with a deadline to bound it.
//
// A request that reaches a node late, after its attempt was undone or its
// lease released (it was held up on the way, or sent on another
// connection to a paused server), is refused there by every primitive,
// and so is a copy of a request sent twice (by a client that retried on a
// broken connection, or by the network): the release or undo, and an
// attempt that does not wait in line, leave a mark of a few bytes on each
// node for the attempt's TTL. A request later than that may hold the name
// on that node for one TTL, as a lease nobody has; it never makes two
// leases valid. A plain Mutex's attempt that does not wait in line (a
// TryLock, an attempt under Poll, the first of a Lock under Notify) is
// the exception, so that an uncontended acquisition costs one SET and one
// INCR: it reads no mark where the name is free, and landing late there,
// holds that node the same way. docs/protocol.md describes the marks,
// SAFETY.md what remains.
//
// # Release and extension
//
// Unlock is compare-and-delete on the lease's random token, so only the
// holder can release, and a lease that expired can never touch the next
// holder's key. Each node is probed once for native commands (Valkey 9
// DELIFEQ, Redis 8.4 DELEX ... IFEQ) and falls back to a Lua script where
// the server lacks them. Extend is a script that lengthens the key's
// expiry, never shortens it, while the token holds it: an extension whose
// reply was lost may still land after a later, longer one, and must not
// cut the lease short (SET ... IFEQ ... PX, the native compare-and-set,
// would). So does every acquisition script that finds the lock held by
// its own token already: a waiter's attempt that timed out may land after
// a later attempt won and the lease was extended. A lease records the
// shorter validity it asked for; the key may outlive it.
//
// # Fencing tokens
//
// Every acquisition draws a token from a per-name counter (the key
// "<prefix>{name}:fence") in the same script that grants it. Claim: if lease A's validity window ends before lease B is
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
// A counter lives WithIdleExpiry (10 minutes by default) after its last
// draw or raise, so a name no one uses leaves nothing behind; the
// uncontended acquisition and a Mutex's hand-off draw with one INCR, which
// renews the expiry only every 64th token. A counter that does not exist,
// because it expired or because its node lost its data, starts again from
// the server's clock: milliseconds since the epoch times 1024. That is
// above every token it drew before as long as the name drew fewer than
// 1024 tokens a millisecond on average, and the argument above holds
// across a lost counter as long as no node's clock stepped back, or runs
// behind another node's, by as much as the idle expiry: a raise to T on
// node n, and every draw there but the last 63, come at least that long
// before a new start there.
//
// Assumptions: the servers' clocks, as above; clocks advance at nearly the
// same rate (the drift factor bounds the difference); a node that lost its
// data is not counted again before the lock keys it held would have
// expired (the TTL), else it may grant a lock that another holder still
// has (a master whose replica is promoted loses what the replica did not
// take: see WithReplicaAcks, which waits for a replica before a grant
// counts); and the validity window is respected by the caller, which is what
// Lease.Until and Lease.Done are for. A server must never evict the
// library's keys: an evicted lock key lets another client take a held
// lock. Use maxmemory-policy noeviction, or a maxmemory the data never
// reaches (every lock key has a TTL, so the volatile-* policies may evict
// it too); Ping reports a server that may evict (ErrEviction), and the
// Client's first lease logs it. With persistence (appendfsync always), a
// node keeps its counters and locks across restarts, and the clock
// assumption is needed only for idle names. WithFencing(false) drops the
// extra round trip (when one is needed) and with it the guarantee across
// holders.
//
// A reentrant acquisition (WithOwner) also draws a fresh, larger token: use
// the newest token for fenced writes.
//
// # Waiting
//
// Lock waits through the Client's wait strategy: messages from the
// servers (Notify, the default, RESP3 only) or backoff with full jitter
// (Poll). Every call that can block takes a context; its cancellation is
// reported as the context's error, distinct from ErrNotAcquired.
//
// Under Notify the waiters of a Mutex, MultiLock, FairMutex, RWMutex
// writer or Semaphore wait in a line kept in Redis, each by an entry of
// its own (its ticket, a field of a hash beside the line), and are served
// in arrival order: a release hands
// the lock to the oldest live waiter and tells that waiter's Client, by a
// message on the Client's own channel, which it subscribes once per node.
// So a release wakes one waiter among all processes, and no one barges in
// before it. A Mutex waiter granted the lock by a majority of nodes, with
// one fencing token, holds it with no request of its own (its validity
// counts from its last attempt, before the grants); otherwise it confirms
// the grants with an attempt. A reentrant waiter (WithOwner), a Mutex's
// or a MultiLock's, gets the lock reserved for a moment instead (at most
// 200ms or half the TTL) and takes it with an attempt (a MultiLock's
// takes its other names with it). A waiter that gives up passes on what
// it was granted or reserved meanwhile. A waiter in line hears no
// keyspace event (it needs no notify-keyspace-events on the servers): it
// retries at the holder's TTL, so a holder that died, or a DEL from
// elsewhere, is noticed then. A waiter that crashes is passed over where its node is
// one server (its Client's channel has no listener there); on a Redis
// Cluster it may still be granted the lock, which then frees at the
// waiter's TTL, as if it had crashed holding it.
//
// Releasing through the line takes a script: under Notify, Unlock does
// not use the native compare-and-delete commands, which cannot wake the
// next waiter. A Poll client releasing a lock that Notify clients wait on
// does not wake them; they retry at the holder's TTL.
//
// A message proves what it says and carries no secret: it holds the
// fencing token and the waiter's ticket with their MAC (HMAC-SHA1), keyed
// by a secret that the waiter's last attempt stored in its ticket on that
// node, which the release script reads and never sends. A waiter heeds
// only the first such message from a node between two of its attempts.
// So a subscriber of the Clients' channels that cannot read the library's
// keys can neither give a waiter a lock or a token nor make it attempt
// (publishing on the keyspace channels, __keyspace@<db>__:<prefix>*, or
// on the readers' and latches' channels, whose wake-ups carry no MAC, can
// wake a waiter: grant that to no untrusted user). docs/protocol.md
// describes the keys, scripts and messages of every primitive.
//
// # Access control
//
// The library's Redis user needs, on every node: read and write access to
// the keys under its prefix (~redlock:* with the default prefix); EVALSHA
// and EVAL; PUBLISH and SUBSCRIBE on the channels <prefix>client:* (the
// Clients' own channels), <prefix>{name}:rw:rq and <prefix>{name}:latch
// (those of RWMutex readers and Latch waiters) and, under Notify,
// __keyspace@<db>__:<prefix>*;
// on a Redis Cluster, SPUBLISH and SSUBSCRIBE on the channels <prefix>*, and CLUSTER KEYSLOT and
// CLUSTER SLOTS (a hand-off goes first to a channel of the waiter's
// Client sharded with the lock, <prefix>{name}...:c:<client id>, which
// stays in the lock's shard where a classic message reaches every node; a
// user refused these still gets its hand-offs, classically); CONFIG GET and SET of
// notify-keyspace-events, unless the servers' configuration already has
// the flags (New then only reads them); and, to wait for replicas (see
// WithReplicaAcks), SET and WAIT (a grant writes the marker key
// <prefix>{name}:acked, which lasts a millisecond) and INFO replication or,
// on a Cluster, CLUSTER NODES. A server that refuses INFO or CLUSTER NODES
// is taken to have no replicas. Every key and channel the library uses
// is under the prefix, so a user confined to one ("~tenant:*
// resetchannels &tenant:* &__keyspace@0__:tenant:*") uses every primitive
// with WithKeyPrefix("tenant:"). What protects the locks from other
// users: none may write the library's keys (a writer can set any lock); a
// user that can publish and subscribe on <prefix>client:* but cannot read
// the library's keys cannot make a waiter believe it holds a lock, nor
// give it a token (though, by subscribing a waiter's sharded channel on a
// standalone server, it can take a hand-off's message from it, which then
// waits for its safety net); a user that can also read them can learn a
// waiter's secret, so give untrusted users neither (for example "resetchannels
// &app:*" and key patterns that exclude the prefix).
package core
