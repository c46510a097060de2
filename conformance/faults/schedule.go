package faults

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// AnyNode in Rule.Node matches a call on every node.
const AnyNode = -1

// Rule faults the calls it matches.
type Rule struct {
	Node int    // the node, or AnyNode
	Op   string // the operation of package spec, matching its natives too; "" for every one
	// Key, when not empty, must be one of the call's keys. It keeps out the
	// probes of native commands, which core runs on a key of its own.
	Key string
	// Nth faults only the Nth matching call after the rule was added (1:
	// the next one); 0 faults every matching call.
	Nth   int
	Fault Fault
}

func (r Rule) matches(c Call) bool {
	return (r.Node == AnyNode || r.Node == c.Node) && (r.Op == "" || r.Op == c.Op) && (r.Key == "" || slices.Contains(c.Keys, r.Key))
}

// Schedule is a Hook made of rules, which a test adds as it goes. The
// first rule that faults a call decides; a call no rule faults passes.
type Schedule struct {
	mu    sync.Mutex
	rules []*ruleState
}

type ruleState struct {
	Rule
	seen int
}

// Add adds rules; their Nth counts the calls from now on.
func (s *Schedule) Add(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rules {
		s.rules = append(s.rules, &ruleState{Rule: r})
	}
}

// Clear removes every rule, those still waiting for their Nth call too.
func (s *Schedule) Clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Hook is s as a Hook.
func (s *Schedule) Hook(c Call) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.rules {
		if !r.matches(c) {
			continue
		}
		r.seen++
		if r.Nth == 0 || r.seen == r.Nth {
			return r.Fault
		}
	}
	return Fault{}
}

// Random faults calls at random, by a seed: each call's fault depends only
// on the seed and the call's node, method and number, not on the order in
// which concurrent calls arrive, so that a failure replays from its seed
// as far as the calls on each node come in the same order.
type Random struct {
	Seed     uint64
	Rate     float64       // the share of calls faulted, spread evenly over the kinds
	MaxDelay time.Duration // a delayed call runs after up to this
}

// NewRandom returns a Random schedule with a seed from the clock, to be
// printed (String) so that a failure can be replayed.
func NewRandom(rate float64, maxDelay time.Duration) Random {
	return Random{Seed: uint64(time.Now().UnixNano()), Rate: rate, MaxDelay: maxDelay}
}

// String is the Go expression that makes r again.
func (r Random) String() string {
	return fmt.Sprintf("faults.Random{Seed: %d, Rate: %g, MaxDelay: %v}", r.Seed, r.Rate, r.MaxDelay)
}

// Hook is r as a Hook.
func (r Random) Hook(c Call) Fault {
	// A hash of the whole call seeds the draw: calls that differ in one
	// field only must not get related faults.
	rng := rand.New(rand.NewChaCha8(sha256.Sum256(fmt.Appendf(nil, "%d/%d/%s/%d", r.Seed, c.Node, c.Method, c.N))))
	if rng.Float64() >= r.Rate {
		return Fault{}
	}
	f := Fault{Kind: Kind(1 + rng.IntN(4))}
	if (f.Kind == Delay || f.Kind == Stall) && r.MaxDelay > 0 {
		f.After = time.Duration(rng.Int64N(int64(r.MaxDelay)))
	}
	return f
}
