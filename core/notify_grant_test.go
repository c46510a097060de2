package core

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// signed is what a release tells of fence (a grant, or 0 for a wake-up)
// to ticket, as lib/tell.lua writes it: the MAC by secret, and the
// message it covers.
func signed(secret string, fence int64, ticket string) (mac, message string) {
	message = fmt.Sprintf("%d %s", fence, ticket)
	return macHex(secret, message), message
}

func macHex(secret, message string) string {
	h := hmac.New(sha1.New, []byte(secret))
	h.Write([]byte(message))
	return hex.EncodeToString(h.Sum(nil))
}

// TestGrantsCountOnlyNews checks which grants a queued waiter may rely on
// without a request: one its own attempt found is not news (the attempt
// used it, or undid it), and none from a node where an attempt failed is,
// as the attempt's cleanup may undo a grant made meanwhile; and only a grant
// with the MAC by the secret that the last attempt stored on its node is
// heard at all, or counts.
func TestGrantsCountOnlyNews(t *testing.T) {
	g := newGrants(3)
	const ticket = "redlock:{n}:t:cid:R"
	// hear and stale as a release tells them: the MAC by secret of fence.
	hear := func(node int, fence int64, secret string) bool {
		mac, message := signed(secret, fence, ticket)
		return g.hear(node, fence, mac, message)
	}
	stale := func(node int, fence int64, secret string) bool {
		mac, message := signed(secret, fence, ticket)
		return g.stale(node, fence, mac, message)
	}
	if hear(0, 7, "") {
		t.Fatal("a grant heard before any attempt counts")
	}
	g.expect()
	s := func(node int) string { return g.secret(node) }
	if hear(1, 7, s(0)) || hear(0, 7, s(1)) {
		t.Fatal("a grant with another node's secret is heard")
	}
	hear(0, 7, s(0))
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("one grant of three counts as a quorum of two")
	}
	hear(1, 7, s(1))
	if nodes, fence, ok := g.live(2, true); !ok || fence != 7 || !slices.Equal(nodes, []bool{true, true, false}) {
		t.Fatalf("grants 7, 7 from nodes 0 and 1: got %v %d %v, want [true true false] 7 true", nodes, fence, ok)
	}
	g.expect() // the next attempt
	g.observe(1, grant{Acquired: true, Fence: 7}, nil)
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("a grant the attempt found still counts")
	}
	hear(1, 8, s(1))
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("grants 7 and 8 count with fencing, though neither node holds the other's token")
	}
	if nodes, _, ok := g.live(2, false); ok || nodes[0] {
		t.Fatal("node 0's grant, heard before the attempt, counts: it may have expired before the attempt, which another client's lease there refused")
	}
	if hear(1, 999, s(1)); g.heard[1] != 8 {
		t.Fatalf("a second grant on node 1 since the attempt, made by someone who knew the secret, set its token to %d", g.heard[1])
	}
	g.observe(0, grant{}, errors.New("timeout"))
	hear(0, 9, s(0))
	if nodes, _, _ := g.live(1, false); nodes[0] {
		t.Fatal("a grant from a node where an attempt failed counts")
	}
	g.observe(2, grant{Acquired: false}, nil)
	hear(2, 8, s(2))
	if nodes, fence, ok := g.live(2, true); !ok || fence != 8 || !slices.Equal(nodes, []bool{false, true, true}) {
		t.Fatalf("grants 8, 8 from nodes 1 and 2: got %v %d %v, want [false true true] 8 true", nodes, fence, ok)
	}
	previous := s(0)
	g.expect() // a new attempt: grants made before it are stale
	if hear(0, 10, previous) || hear(1, 10, "forged") {
		t.Fatal("a grant with the previous attempt's secret, or a forged one, is heard")
	}
	if nodes, fence, _ := g.live(2, true); slices.Contains(nodes, true) {
		t.Fatalf("after a new attempt, grants heard before it, or stale or forged ones, are live: %v %d", nodes, fence)
	}
	if stale(0, 10, previous) {
		t.Fatal("a grant with the previous attempt's secret wakes the waiter, although one with that secret was heard")
	}
	unheard := s(1)
	g.expect() // an attempt whose grants were not heard, then another
	if !stale(1, 10, unheard) || stale(1, 10, unheard) || stale(1, 10, "forged") || stale(1, 10, s(1)) {
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
// and sends its MAC again, with the same token or one of its choice,
// naming the other ticket, must not make the other ticket's grants live.
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
			mac, message := signed(b.grants.secret(i), genuine[i], b.key)
			fence, ticket, _ := strings.Cut(message, " ")
			deliver(i, fence+" "+mac+" "+ticket)
			deliver(i, "9000000000000000 "+mac+" "+a.key)
			deliver(i, fence+" "+mac+" "+a.key)
		}
		if nodes, fence, ok := a.grants.live(2, true); ok || slices.Contains(nodes, true) {
			t.Errorf("genuine grants %v to b: the forged grants to a are live: %v, token %d", genuine, nodes, fence)
		}
	}
}

// TestReplayAfterRotationIgnored: a subscriber that read a grant the
// waiter heard sends it again after the waiter's token rotated (an undo
// failed: it waits, its next attempt not started): the copy must not wake
// the waiter, which would attempt on every node for each copy.
func TestReplayAfterRotationIgnored(t *testing.T) {
	c := &Client{id: "cid", nodes: make([]*node, 3), quorum: 2}
	n := &notifier{c: c, keys: map[string]*keyWaiters{}, tickets: map[string]*ticket{}}
	tk := n.register("redlock:{a}:t:cid:RA", "tok0", nil)
	tk.stem = "tok"
	deliver := func(message string) { n.deliverer(0, "__keyspace@0__:")(c.channel("redlock:"), message) }
	woke := func() bool {
		select {
		case <-tk.wake:
			return true
		default:
			return false
		}
	}
	tk.grants.expect()
	mac, message := signed(tk.grants.secret(0), 42, tk.key)
	fence, ticket, _ := strings.Cut(message, " ")
	genuine := fence + " " + mac + " " + ticket
	if deliver(genuine); !woke() {
		t.Fatal("the genuine grant did not wake the waiter")
	}
	if deliver(genuine); woke() {
		t.Fatal("a copy of the grant woke the waiter")
	}
	tk.grants.expect() // the next attempt, which failed unsure:
	tk.rotate()        // the waiter rotated its token and waits
	for i := range 3 {
		if deliver(genuine); woke() {
			t.Fatalf("copy %d of a grant the waiter heard, sent after its rotation, woke it", i+1)
		}
	}
	late, lateMessage := signed(tk.grants.earlier[len(tk.grants.earlier)-1].value[0], 43, tk.key)
	f, tkt, _ := strings.Cut(lateMessage, " ")
	if deliver(f + " " + late + " " + tkt); !woke() {
		t.Fatal("a grant to the rotated attempt, heard for the first time, did not wake the waiter")
	}
}
