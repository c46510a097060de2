package core

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// TestTallyAll checks how an attempt over three names is summed up: which
// nodes count toward the quorum, the token, and the name to wait for.
func TestTallyAll(t *testing.T) {
	ok := func(fence int64) grant { return grant{Acquired: true, Fence: fence} }
	held := func(ttl time.Duration) grant { return grant{HolderTTL: ttl} }
	down := errors.New("down")
	for _, tc := range []struct {
		name    string
		replies []quorum.Reply[[]grant]
		want    allTally
	}{
		{"all granted everywhere", []quorum.Reply[[]grant]{
			{V: []grant{ok(1), ok(5), ok(2)}},
			{V: []grant{ok(3), ok(4), ok(2)}},
		}, allTally{granted: 2, fence: 5, blocked: 0, holderTTL: -1}},
		{"the lowest refused name is waited for, with its shortest TTL", []quorum.Reply[[]grant]{
			{V: []grant{ok(1), held(900 * time.Millisecond)}},
			{V: []grant{held(700 * time.Millisecond)}},
			{V: []grant{ok(1), ok(1), held(100 * time.Millisecond)}},
			{V: []grant{held(800 * time.Millisecond)}},
		}, allTally{granted: 0, fence: 1, blocked: 0, holderTTL: 700 * time.Millisecond}},
		{"a failed node counts for nothing but its grants' tokens", []quorum.Reply[[]grant]{
			{V: []grant{ok(9)}, Err: down},
			{V: []grant{ok(1), ok(1), ok(1)}},
			{V: []grant{ok(2), held(-1)}},
		}, allTally{granted: 1, fence: 9, blocked: 1, holderTTL: -1}},
		{"refused nowhere: wait for the first name", []quorum.Reply[[]grant]{
			{Err: down}, {Err: down},
		}, allTally{granted: 0, fence: 0, blocked: 0, holderTTL: -1}},
	} {
		if got := tallyAll(tc.replies, 3); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
