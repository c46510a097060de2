package line

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
func signed(secret string, fence int64, Ticket string) (mac, message string) {
	message = fmt.Sprintf("%d %s", fence, Ticket)
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
	g := newGrants(3, nil)
	const Ticket = "redlock:{n}:t:cid:R"
	// hear and stale as a release tells them: the MAC by secret of fence.
	hear := func(node int, fence int64, secret string) bool {
		mac, message := signed(secret, fence, Ticket)
		return g.hear(node, fence, mac, message)
	}
	stale := func(node int, fence int64, secret string) bool {
		mac, message := signed(secret, fence, Ticket)
		return g.stale(node, fence, mac, message)
	}
	if hear(0, 7, "") {
		t.Fatal("a grant heard before any attempt counts")
	}
	g.Expect()
	s := func(node int) string { return g.Secret(node) }
	if hear(1, 7, s(0)) || hear(0, 7, s(1)) {
		t.Fatal("a grant with another node's secret is heard")
	}
	hear(0, 7, s(0))
	if _, _, ok := g.Live(2, true); ok {
		t.Fatal("one grant of three counts as a quorum of two")
	}
	hear(1, 7, s(1))
	if nodes, fence, ok := g.Live(2, true); !ok || fence != 7 || !slices.Equal(nodes, []bool{true, true, false}) {
		t.Fatalf("grants 7, 7 from nodes 0 and 1: got %v %d %v, want [true true false] 7 true", nodes, fence, ok)
	}
	g.Expect() // the next attempt
	g.Observe(1, true, 7, nil)
	if _, _, ok := g.Live(2, true); ok {
		t.Fatal("a grant the attempt found still counts")
	}
	hear(1, 8, s(1))
	if _, _, ok := g.Live(2, true); ok {
		t.Fatal("grants 7 and 8 count with fencing, though neither node holds the other's token")
	}
	if nodes, _, ok := g.Live(2, false); ok || nodes[0] {
		t.Fatal("node 0's grant, heard before the attempt, counts: it may have expired before the attempt, which another client's lease there refused")
	}
	if hear(1, 999, s(1)); g.heard[1] != 8 {
		t.Fatalf("a second grant on node 1 since the attempt, made by someone who knew the secret, set its token to %d", g.heard[1])
	}
	g.Observe(0, false, 0, errors.New("timeout"))
	hear(0, 9, s(0))
	if nodes, _, _ := g.Live(1, false); nodes[0] {
		t.Fatal("a grant from a node where an attempt failed counts")
	}
	g.Observe(2, false, 0, nil)
	hear(2, 8, s(2))
	if nodes, fence, ok := g.Live(2, true); !ok || fence != 8 || !slices.Equal(nodes, []bool{false, true, true}) {
		t.Fatalf("grants 8, 8 from nodes 1 and 2: got %v %d %v, want [false true true] 8 true", nodes, fence, ok)
	}
	previous := s(0)
	g.Expect() // a new attempt: grants made before it are stale
	if hear(0, 10, previous) || hear(1, 10, "forged") {
		t.Fatal("a grant with the previous attempt's secret, or a forged one, is heard")
	}
	if nodes, fence, _ := g.Live(2, true); slices.Contains(nodes, true) {
		t.Fatalf("after a new attempt, grants heard before it, or stale or forged ones, are live: %v %d", nodes, fence)
	}
	if stale(0, 10, previous) {
		t.Fatal("a grant with the previous attempt's secret wakes the waiter, although one with that secret was heard")
	}
	unheard := s(1)
	g.Expect() // an attempt whose grants were not heard, then another
	if !stale(1, 10, unheard) || stale(1, 10, unheard) || stale(1, 10, "forged") || stale(1, 10, s(1)) {
		t.Fatal("a grant with the previous attempt's secret wakes other than once, or a forged or current one wakes as stale")
	}
	var none *Grants
	if none.Expect(); none.Secret(0) != "" {
		t.Fatal("a waiter that hears no grants stores a secret")
	}
	none.Observe(0, true, 0, nil) // a waiter that is not queued notes nothing
}

// TestSiblingTicketCannotBeForged: a MultiLock waiter's tickets share one
// attempt's secrets. A subscriber that reads a genuine grant to one ticket
// and sends its MAC again, with the same token or one of its choice,
// naming the other ticket, must not make the other ticket's grants live.
func TestSiblingTicketCannotBeForged(t *testing.T) {
	for _, genuine := range [][3]int64{{100, 101, 102}, {100, 100, 100}} {
		n := newTestNotifier(t, 3)
		wake := make(chan struct{}, 1)
		a := n.Register("redlock:{a}:t:cid:RA", "token", wake)
		b := n.Register("redlock:{b}:t:cid:RB", "token", wake)
		a.Grants.Expect()
		b.Grants.ExpectAs(&a.Grants)
		for i := range 3 { // the attempt took a and stopped at b
			a.Grants.Observe(i, true, 0, nil)
			b.Grants.Observe(i, false, 0, nil)
		}
		deliver := func(i int, message string) { n.deliverer(i, "__keyspace@0__:")(n.channel("redlock:"), message) }
		for i := range 3 {
			mac, message := signed(b.Grants.Secret(i), genuine[i], b.Key)
			fence, Ticket, _ := strings.Cut(message, " ")
			deliver(i, fence+" "+mac+" "+Ticket)
			deliver(i, "9000000000000000 "+mac+" "+a.Key)
			deliver(i, fence+" "+mac+" "+a.Key)
		}
		if nodes, fence, ok := a.Grants.Live(2, true); ok || slices.Contains(nodes, true) {
			t.Errorf("genuine grants %v to b: the forged grants to a are live: %v, token %d", genuine, nodes, fence)
		}
	}
}

// TestReplayAfterRotationIgnored: a subscriber that read a grant the
// waiter heard sends it again after the waiter's token rotated (an undo
// failed: it waits, its next attempt not started): the copy must not wake
// the waiter, which would attempt on every node for each copy.
func TestReplayAfterRotationIgnored(t *testing.T) {
	n := newTestNotifier(t, 3)
	tk := n.Register("redlock:{a}:t:cid:RA", "tok0", nil)
	tk.Stem = "tok"
	deliver := func(message string) { n.deliverer(0, "__keyspace@0__:")(n.channel("redlock:"), message) }
	woke := func() bool {
		select {
		case <-tk.Wake:
			return true
		default:
			return false
		}
	}
	tk.Grants.Expect()
	mac, message := signed(tk.Grants.Secret(0), 42, tk.Key)
	fence, Ticket, _ := strings.Cut(message, " ")
	genuine := fence + " " + mac + " " + Ticket
	if deliver(genuine); !woke() {
		t.Fatal("the genuine grant did not wake the waiter")
	}
	if deliver(genuine); woke() {
		t.Fatal("a copy of the grant woke the waiter")
	}
	tk.Grants.Expect() // the next attempt, which failed unsure:
	tk.Rotate()        // the waiter rotated its token and waits
	for i := range 3 {
		if deliver(genuine); woke() {
			t.Fatalf("copy %d of a grant the waiter heard, sent after its rotation, woke it", i+1)
		}
	}
	late, lateMessage := signed(tk.Grants.earlier[len(tk.Grants.earlier)-1].value[0], 43, tk.Key)
	f, tkt, _ := strings.Cut(lateMessage, " ")
	if deliver(f + " " + late + " " + tkt); !woke() {
		t.Fatal("a grant to the rotated attempt, heard for the first time, did not wake the waiter")
	}
}
