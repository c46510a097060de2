package core

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestGrantsCountOnlyNews checks which grants a queued waiter may rely on
// without a request: one its own attempt found is not news (the attempt
// used it, or undid it), and none from a node where an attempt failed is,
// as the attempt's cleanup may undo a grant made meanwhile; and only a grant
// carrying the secret that the last attempt stored on its node is heard
// at all, or counts.
func TestGrantsCountOnlyNews(t *testing.T) {
	g := newGrants(3)
	if g.hear(0, 7, "") {
		t.Fatal("a grant heard before any attempt counts")
	}
	g.expect()
	s := func(node int) string { return g.secret(node) }
	if g.hear(1, 7, s(0)) || g.hear(0, 7, s(1)) {
		t.Fatal("a grant with another node's secret is heard")
	}
	g.hear(0, 7, s(0))
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("one grant of three counts as a quorum of two")
	}
	g.hear(1, 7, s(1))
	if nodes, fence, ok := g.live(2, true); !ok || fence != 7 || !slices.Equal(nodes, []bool{true, true, false}) {
		t.Fatalf("grants 7, 7 from nodes 0 and 1: got %v %d %v, want [true true false] 7 true", nodes, fence, ok)
	}
	g.expect() // the next attempt
	g.observe(1, grant{Acquired: true, Fence: 7}, nil)
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("a grant the attempt found still counts")
	}
	g.hear(1, 8, s(1))
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("grants 7 and 8 count with fencing, though neither node holds the other's token")
	}
	if nodes, _, ok := g.live(2, false); ok || nodes[0] {
		t.Fatal("node 0's grant, heard before the attempt, counts: it may have expired before the attempt, which another client's lease there refused")
	}
	if g.hear(1, 999, s(1)); g.heard[1] != 8 {
		t.Fatalf("a second grant on node 1 since the attempt, by someone who read the first's secret, set its token to %d", g.heard[1])
	}
	g.observe(0, grant{}, errors.New("timeout"))
	g.hear(0, 9, s(0))
	if nodes, _, _ := g.live(1, false); nodes[0] {
		t.Fatal("a grant from a node where an attempt failed counts")
	}
	g.observe(2, grant{Acquired: false}, nil)
	g.hear(2, 8, s(2))
	if nodes, fence, ok := g.live(2, true); !ok || fence != 8 || !slices.Equal(nodes, []bool{false, true, true}) {
		t.Fatalf("grants 8, 8 from nodes 1 and 2: got %v %d %v, want [false true true] 8 true", nodes, fence, ok)
	}
	stale := s(0)
	g.expect() // a new attempt: grants made before it are stale
	if g.hear(0, 10, stale) || g.hear(1, 10, "forged") {
		t.Fatal("a grant with the previous attempt's secret, or a forged one, is heard")
	}
	if nodes, fence, _ := g.live(2, true); slices.Contains(nodes, true) {
		t.Fatalf("after a new attempt, grants heard before it, or stale or forged ones, are live: %v %d", nodes, fence)
	}
	if g.stale(0, stale) {
		t.Fatal("a grant with the previous attempt's secret wakes the waiter, although one with that secret was heard")
	}
	unheard := s(1)
	g.expect() // an attempt whose grants were not heard, then another
	if !g.stale(1, unheard) || g.stale(1, unheard) || g.stale(1, "forged") || g.stale(1, s(1)) {
		t.Fatal("a grant with the previous attempt's secret wakes other than once, or a forged or current one wakes as stale")
	}
	var none *grants
	if none.expect(); none.secret(0) != "" {
		t.Fatal("a waiter that hears no grants stores a secret")
	}
	none.observe(0, grant{Acquired: true}, nil) // a waiter that is not queued notes nothing
}

// TestSiblingTicketCannotBeForged: a MultiLock waiter's tickets share one
// attempt's secrets. A subscriber that reads a genuine grant to one ticket
// and sends it again, with a token of its choice, naming the other ticket,
// must not make the other ticket's grants live.
func TestSiblingTicketCannotBeForged(t *testing.T) {
	for _, genuine := range [][3]int64{{100, 101, 102}, {100, 100, 100}} {
		c := &Client{id: "cid", nodes: make([]*node, 3), quorum: 2}
		n := &notifier{c: c, keys: map[string]*keyWaiters{}, tickets: map[string]*ticket{}}
		wake := make(chan struct{}, 1)
		a := n.register("redlock:{a}:t:cid:RA", "token", wake)
		b := n.register("redlock:{b}:t:cid:RB", "token", wake)
		a.grants.expect()
		b.grants.expectAs(&a.grants)
		for i := range 3 { // the attempt took a and stopped at b
			a.grants.observe(i, grant{Acquired: true}, nil)
			b.grants.observe(i, grant{}, nil)
		}
		deliver := func(i int, message string) { n.deliverer(i, "__keyspace@0__:")(c.channel("redlock:"), message) }
		for i := range 3 {
			secret := b.grants.secret(i)
			deliver(i, fmt.Sprintf("%d %s %s", genuine[i], secret, b.key))
			deliver(i, "9000000000000000 "+secret+" "+a.key)
		}
		if nodes, fence, ok := a.grants.live(2, true); ok || slices.Contains(nodes, true) {
			t.Errorf("genuine grants %v to b: the forged grants to a are live: %v, token %d", genuine, nodes, fence)
		}
	}
}
