package quorum

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/redlockgo/redlock/driver"
)

// What a majority of five nodes has is the third largest value: two nodes
// with more are no majority.
func TestMajorityHas(t *testing.T) {
	got := MajorityHas(3, []int{9, 1, 7, 3, 8}, func(v int) int { return v })
	if got != 7 {
		t.Fatalf("MajorityHas(3, 9 1 7 3 8) = %d, want 7", got)
	}
}

// A value counts once a majority names it; the zero value (no holder)
// never does, however many nodes have it.
func TestMajorityNames(t *testing.T) {
	id := func(s string) string { return s }
	if got, ok := MajorityNames(2, []string{"", "", "a", "b", "a"}, id); !ok || got != "a" {
		t.Fatalf(`MajorityNames(2, "" "" a b a) = %q, %v; want "a", true`, got, ok)
	}
	if got, ok := MajorityNames(3, []string{"", "", "", "a", "b"}, id); ok {
		t.Fatalf(`MajorityNames(3, "" "" "" a b) = %q, true; want no majority`, got)
	}
}

// A loss is confirmed once too few nodes hold the lease for the silent
// ones to make a majority; until then it is ErrNoQuorum.
func TestUnconfirmed(t *testing.T) {
	g, err := NewGroup([]driver.Driver{replyDriver{}, replyDriver{}, replyDriver{}}, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	silent := errors.New("timeout")
	if err := Unconfirmed(g, []Reply[bool]{{V: true}, {Err: silent}, {V: false}}); !errors.Is(err, ErrNoQuorum) || !errors.Is(err, silent) {
		t.Fatalf("one holds, one silent: Unconfirmed = %v, want ErrNoQuorum with the node's error", err)
	}
	if err := Unconfirmed(g, []Reply[bool]{{V: false}, {Err: silent}, {V: false}}); err != nil {
		t.Fatalf("none holds, one silent: Unconfirmed = %v, want nil (lost)", err)
	}
	if err := Unconfirmed(g, []Reply[bool]{{V: true}, {V: true}, {Err: silent}}); err != nil {
		t.Fatalf("a majority holds: Unconfirmed = %v, want nil", err)
	}
}
