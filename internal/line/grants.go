package line

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A release that hands a queued waiter the lock tells its Client the
// waiter's ticket and the fencing token (see tickets.go). The waiter
// holds the lock without a request of its own once grants from a majority
// of nodes are live: granted after its last attempt, so that its validity
// counts from that attempt's start, and not undone since. A grant its own
// attempt found is not news (the attempt used it, or undid it on failure),
// nor is any from a node on which an attempt failed, as the attempt's
// cleanup may undo a grant made meanwhile.

// Grants is what a waiter heard of grants and what its attempts found, by
// node.
type Grants struct {
	mu         sync.Mutex
	heard      []int64    // the highest fencing token a grant on the node published
	found      []int64    // the highest token an attempt found granted there; MaxInt64 after one failed there
	secrets    *secrets   // the last attempt's; nil before one
	earlier    []*secrets // the attempts' before it, the last few
	standalone []bool     // by node: one server, where a secret says so (see Expect); shared, read only
}

func newGrants(nodes int, standalone []bool) Grants {
	tokens := make([]int64, 2*nodes) // one allocation for both
	return Grants{heard: tokens[:nodes:nodes], found: tokens[nodes:], standalone: standalone}
}

// secrets are what one attempt stores in a waiter's ticket on each node,
// which keys the MAC of a message a release there sends (see
// lib/hmac.lua), and whether a grant or a wake-up with one was heard yet.
// The tickets of a MultiLock waiter share them: its attempt stores them at
// whichever name it queues.
type secrets struct {
	mu    sync.Mutex
	value []string // by node
	heard []bool   // by node: a grant
	woke  []bool   // by node: a wake-up
}

// claim reports whether mac is the MAC of message by node's secret, and
// whether it is the first grant (fence > 0) or wake-up heard with it (then
// noted).
func (s *secrets) claim(node int, fence int64, mac, message string) (ok, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !macOf(s.value[node], mac, message) {
		return false, false
	}
	seen := s.woke
	if fence > 0 {
		seen = s.heard
	}
	first = !seen[node]
	seen[node] = true
	return true, first
}

// macOf reports whether mac is the hex HMAC-SHA1 of message keyed by
// secret, as lib/hmac.lua computes it; never for an empty secret.
func macOf(secret, mac, message string) bool {
	got, err := hex.DecodeString(mac)
	if err != nil || secret == "" {
		return false
	}
	h := hmac.New(sha1.New, []byte(secret))
	h.Write([]byte(message))
	return hmac.Equal(got, h.Sum(nil))
}

// heardOn reports whether a grant with s was heard on node; false for a
// nil s.
func (s *secrets) heardOn(node int) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heard[node]
}

// handedOn wakes the waiter of a ticket of which node's release told the
// Client: a fencing token when it granted the lock, 0 when it reserved it
// or freed it for an attempt, with the MAC of "<fence> <ticket>" by the
// secret an attempt stored in the ticket (lib/tell.lua). A message is
// heard once per node and secret, as a grant or as a wake-up: a grant
// with the last attempt's secret counts towards the waiter's lease; one
// with an earlier attempt's wakes it only (it was made before the last
// attempt, whose validity counts from its start; that attempt's request
// landed after the last one's, see quorum.Vote, and the next attempt finds the
// grant its own; after a rotation, the next attempt takes over a grant to
// the earlier token, see mutex_acquire.lua). A message without a valid
// MAC is dropped, wake-up and all, and so is a copy of one heard already.
func (n *Notifier) handedOn(node int, ticketKey, fence, mac string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.tickets[ticketKey]
	f, err := strconv.ParseInt(fence, 10, 64)
	if t == nil || err != nil || f < 0 {
		return
	}
	g, message := &t.Grants, fence+" "+ticketKey
	if g.hear(node, f, mac, message) || g.stale(node, f, mac, message) {
		t.signal()
	}
}

// Expect starts an attempt, which stores in the waiter's ticket on each
// node a fresh secret of that node's (see secret). One per node: a grant
// published on one node, which anyone subscribed there may read, says
// nothing of what a grant on another node must carry. On a node that is
// one server the secret starts with OneServerSecret, so that a release there
// tells the waiter with one PUBLISH (lib/tell.lua). A nil g (a waiter
// that hears no grants) does nothing.
func (g *Grants) Expect() {
	if g == nil {
		return
	}
	s := &secrets{value: make([]string, len(g.heard)), heard: make([]bool, len(g.heard)), woke: make([]bool, len(g.heard))}
	for i := range s.value {
		s.value[i] = rand.Text()
		if g.standalone != nil && g.standalone[i] {
			s.value[i] = OneServerSecret + s.value[i]
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keep()
	g.secrets = s
}

// keep moves the last attempt's secrets to the earlier ones.
func (g *Grants) keep() {
	if g.secrets != nil {
		g.earlier = append(g.earlier, g.secrets)
		g.earlier = g.earlier[max(0, len(g.earlier)-4):]
	}
}

// stale reports whether mac authenticates message by a secret that an
// earlier attempt stored on node, heard for the first time (then noted):
// a wake-up, not a grant. A copy of one heard already wakes no one, also
// while the waiter's token rotated: a grant made to the earlier token
// then is heard for the first time.
func (g *Grants) stale(node int, fence int64, mac, message string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.earlier {
		if ok, first := s.claim(node, fence, mac, message); ok {
			return first
		}
	}
	return false
}

// ExpectAs starts an attempt with the secrets of from's, which another
// ticket of the same waiter started (a MultiLock's, one per name): a
// grant heard on either counts for both, so that a subscriber who read
// one cannot send it again naming the other ticket.
func (g *Grants) ExpectAs(from *Grants) {
	from.mu.Lock()
	s := from.secrets
	from.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keep()
	g.secrets = s
}

// Secret is what the last attempt stores in the waiter's ticket on node;
// "" for a nil g, or before an attempt.
func (g *Grants) Secret(node int) string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.secrets == nil {
		return ""
	}
	return g.secrets.value[node]
}

// Secrets are what the last attempt stores in the waiter's ticket, by
// node; "" for each before an attempt.
func (g *Grants) Secrets() []string {
	out := make([]string, len(g.heard))
	for i := range out {
		out[i] = g.Secret(i)
	}
	return out
}

// hear notes a grant on node, and reports whether mac authenticates it by
// the secret that the last attempt stored there. A wake-up (fence 0)
// counts as one heard, a grant only when it is the first such grant, for
// all the tickets that share the secrets: a node grants a waiter once
// between two of its attempts, and a later message with the same MAC is
// a copy, sent again by someone who read the first.
func (g *Grants) hear(node int, fence int64, mac, message string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.secrets == nil {
		return false
	}
	ok, first := g.secrets.claim(node, fence, mac, message)
	if first && fence > 0 {
		g.heard[node] = max(g.heard[node], fence)
	}
	return ok && first
}

// rotate forgets the grants heard: they were made to the token the waiter
// gives up, which its next attempt takes over where they still hold (see
// Ticket.Rotate), and which a lease under the new token must not count.
func (g *Grants) rotate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keep()
	g.secrets = nil
	clear(g.heard)
}

// Observe notes one node's answer to an attempt. A nil g (a waiter that
// hears no grants: TryLock, or Poll) notes nothing.
func (g *Grants) Observe(node int, acquired bool, fence int64, err error) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		g.found[node] = math.MaxInt64
	case acquired:
		g.found[node] = max(g.found[node], fence)
	}
}

// WasGranted reports whether what the last attempt found on node was a
// grant the waiter had heard of, not a lock it took free.
func (g *Grants) WasGranted(node int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.heard[node] > 0 && g.heard[node] >= g.found[node] && g.found[node] != math.MaxInt64
}

// Live returns the nodes whose grant is live (heard with the last
// attempt's secret, and not found by it) and the token they give: the
// highest, and ok only when a quorum granted it and, with fencing, each
// drew the same token, so that it is durable already (see the package
// documentation).
func (g *Grants) Live(quorum int, fencing bool) (nodes []bool, fence int64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	nodes = make([]bool, len(g.heard))
	count, same := 0, true
	for i, f := range g.heard {
		// Only a grant with the last attempt's secret: one heard before
		// that attempt may have expired before it, and another client
		// holds the node now if the attempt was refused there.
		if f > g.found[i] && g.secrets.heardOn(i) {
			nodes[i] = true
			count++
			same = same && (fence == 0 || f == fence)
			fence = max(fence, f)
		}
	}
	return nodes, fence, count >= quorum && (same || !fencing)
}

// grantSpread bounds how long a waiter with live grants from fewer nodes
// than a quorum waits for the others' before it attempts: a release goes
// to every node at once, so their grants arrive close together, and an
// attempt costs a round trip.
const grantSpread = time.Millisecond

// awaitGrants waits up to grantSpread for a quorum of live grants when
// some are in.
func (t *Ticket) awaitGrants(ctx context.Context, quorum int, fencing bool) {
	if nodes, _, ok := t.Grants.Live(quorum, fencing); ok || !slices.Contains(nodes, true) {
		return
	}
	timer := time.NewTimer(grantSpread)
	defer timer.Stop()
	for {
		select {
		case <-t.Wake:
			if _, _, ok := t.Grants.Live(quorum, fencing); ok {
				return
			}
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
