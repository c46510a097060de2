package quorum

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// MajorityHas is the quorum-th largest value of f over nodes, which has
// at least quorum of them: the most that a majority of nodes has.
func MajorityHas[N any, T cmp.Ordered](quorum int, nodes []N, f func(N) T) T {
	v := make([]T, len(nodes))
	for i, n := range nodes {
		v[i] = f(n)
	}
	slices.Sort(v)
	return v[len(v)-quorum]
}

// MajorityNames returns the value of f, other than the zero value, that
// at least quorum of nodes have.
func MajorityNames[N any, K comparable](quorum int, nodes []N, f func(N) K) (K, bool) {
	var zero K
	count := map[K]int{}
	for _, n := range nodes {
		if k := f(n); k != zero {
			if count[k]++; count[k] >= quorum {
				return k, true
			}
		}
	}
	return zero, false
}

// HeldUntil asks every node how long a hold has left there (ask, whose
// answer left reads, 0 or less where it does not hold) and returns until
// when a majority of them still hold it, less the allowance for clock
// drift; the zero time when fewer hold it. It also returns the replies,
// and by node whether it holds there.
func HeldUntil[T any](ctx context.Context, g *Group, tm Timing, ask func(context.Context, *Node) (T, error), left func(T) time.Duration) (time.Time, []Reply[T], []Reply[bool]) {
	start := time.Now()
	replies := Fanout(ctx, g, tm, func(ctx context.Context, _ int, n *Node) (T, error) { return ask(ctx, n) })
	held := make([]Reply[bool], len(replies))
	var lefts []time.Duration
	for i, r := range replies {
		held[i] = Reply[bool]{V: r.Err == nil && left(r.V) > 0, Err: r.Err}
		if held[i].V {
			lefts = append(lefts, left(r.V))
		}
	}
	if len(lefts) < g.Quorum {
		return time.Time{}, replies, held
	}
	return start.Add(MajorityHas(g.Quorum, lefts, func(d time.Duration) time.Duration { return d }) - tm.Drift()), replies, held
}

// Unconfirmed is ErrNoQuorum, with the nodes' errors, when fewer than a
// majority confirmed that a hold holds but the nodes that did not answer
// may make one: the hold is not known to be lost. Else nil.
func Unconfirmed(g *Group, replies []Reply[bool]) error {
	unanswered := Count(len(replies), func(i int) bool { return replies[i].Err != nil })
	if h := Held(replies); h < g.Quorum && h+unanswered >= g.Quorum {
		return errors.Join(ErrNoQuorum, NodeErrors(g, replies))
	}
	return nil
}
