package core

import (
	"errors"
	"slices"
	"testing"
)

// TestGrantsCountOnlyNews checks which grants a queued waiter may rely on
// without a request: one its own attempt found is not news (the attempt
// used it, or undid it), and none from a node where an attempt failed is,
// as the attempt's cleanup may undo a grant made meanwhile.
func TestGrantsCountOnlyNews(t *testing.T) {
	g := newGrants(3)
	g.hear(0, 7)
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("one grant of three counts as a quorum of two")
	}
	g.hear(1, 7)
	if nodes, fence, ok := g.live(2, true); !ok || fence != 7 || !slices.Equal(nodes, []bool{true, true, false}) {
		t.Fatalf("grants 7, 7 from nodes 0 and 1: got %v %d %v, want [true true false] 7 true", nodes, fence, ok)
	}
	g.observe(1, grant{Acquired: true, Fence: 7}, nil)
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("a grant the attempt found still counts")
	}
	g.hear(1, 8)
	if _, _, ok := g.live(2, true); ok {
		t.Fatal("grants 7 and 8 count with fencing, though neither node holds the other's token")
	}
	if _, fence, ok := g.live(2, false); !ok || fence != 8 {
		t.Fatalf("grants 7 and 8 without fencing: got %d %v, want 8 true", fence, ok)
	}
	g.observe(0, grant{}, errors.New("timeout"))
	g.hear(0, 9)
	if nodes, _, _ := g.live(1, false); nodes[0] {
		t.Fatal("a grant from a node where an attempt failed counts")
	}
	g.observe(2, grant{Acquired: false}, nil)
	g.hear(2, 8)
	if nodes, fence, ok := g.live(2, true); !ok || fence != 8 || !slices.Equal(nodes, []bool{false, true, true}) {
		t.Fatalf("grants 8, 8 from nodes 1 and 2: got %v %d %v, want [false true true] 8 true", nodes, fence, ok)
	}
	var none *grants
	none.observe(0, grant{Acquired: true}, nil) // a waiter that is not queued notes nothing
}
