package core

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// A permit ID (Lease.ID of a semaphore lease) names a lease's permits on
// the servers, so that a process other than the one that acquired them can
// extend or release them: a worker that hands its job on hands the ID on.
// It is "<n>-<token>-<slots>-<ttl>": how many permits, the lease's random
// token, the digest of the slots it won (a node that answered late may
// have given the token other slots, which do not count for the lease),
// and the TTL it was acquired with, in milliseconds: a release that finds
// nothing on a node marks the attempt there for that long, as it may
// still land (see semaphore_release.lua).

// Release gives back the permits of the semaphore lease with permit ID id,
// from any Client; a Lease still held for them then reports them not held.
// It returns ErrNotHeld when they had expired or were released already,
// ErrNoQuorum when too few nodes answered, and ErrInvalid, writing
// nothing, when id is not a permit ID of this semaphore's form.
func (s *Semaphore) Release(ctx context.Context, id string) error {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return err
	}
	// As Lease.Unlock, a node that cannot serve the release yet is asked
	// again, here while ctx allows: how long the permits last is the
	// holder's to know.
	var serveUntil time.Time
	if d, ok := ctx.Deadline(); ok {
		serveUntil = d
	}
	replies := vote(ctx, s.c, &s.opts, func(ctx context.Context, _ int, nd *node) (bool, error) {
		return h.release(ctx, nd)
	}, ballot[bool]{serveUntil: serveUntil})
	return heldOn(ctx, s.c, replies)
}

// Extend resets the TTL of the permits with permit ID id to ttl, from any
// Client. A Lease held for them keeps its own validity deadline: extend
// through the Lease where there is one. Errors are those of Release, and
// ErrInvalid for a TTL Client.Semaphore would refuse.
func (s *Semaphore) Extend(ctx context.Context, id string, ttl time.Duration) error {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return err
	}
	o := s.opts
	o.ttl = ttl
	if err := o.validate(s.name); err != nil {
		return err
	}
	replies := fanout(ctx, s.c, &o, func(ctx context.Context, _ int, nd *node) (bool, error) {
		ok, err := h.extend(ctx, nd, ttl)
		return nd.extended(ctx, &o, s.names, ok, err)
	})
	return heldOn(ctx, s.c, replies)
}

// holdOf checks the call and parses id into the hold it names.
func (s *Semaphore) holdOf(ctx context.Context, id string) (semaphoreHold, error) {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return semaphoreHold{}, err
	}
	parts := strings.Split(id, "-")
	if len(parts) != 4 {
		return semaphoreHold{}, notPermitID(id, s.name)
	}
	n, errN := strconv.ParseInt(parts[0], 10, 32)
	slots, errS := strconv.ParseInt(parts[2], 10, 64)
	ttl, errT := strconv.ParseInt(parts[3], 10, 64)
	if errT == nil && (ttl < 1 || ttl > maxDuration.Milliseconds()) {
		errT = strconv.ErrRange
	}
	o := s.opts
	o.ttl = time.Duration(ttl) * time.Millisecond
	if errN != nil || errS != nil || errT != nil || n < 1 || n > maxPermitsInID || slots < 0 || slots >= digestBound || !isToken(parts[1]) ||
		o.validate(s.name) != nil {
		return semaphoreHold{}, notPermitID(id, s.name)
	}
	return semaphoreHold{keys: s.keys, token: parts[1], n: n, slots: slots, ticket: s.keys.mark(parts[1]), ttl: o.ttl}, nil
}

// maxPermitsInID is the most permits a permit ID may name: the
// MaxSemaphoreAcquire of earlier versions, so that a lease one of them
// took can still be released and extended during a rolling upgrade (its
// scripts' work is bounded by it all the same).
const maxPermitsInID = 500

func notPermitID(id, name string) error {
	return invalid("%q is not a permit ID of semaphore %q: pass the Lease.ID of one of its leases", id, name)
}

// isToken reports whether s looks like a token from crypto/rand.Text: 26
// characters of the standard base32 alphabet.
func isToken(s string) bool {
	return len(s) == 26 && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == ""
}

// heldOn is the result of acting on a hold by its ID: nil when a majority
// held it, else ErrNoQuorum (or ctx's error) or ErrNotHeld.
func heldOn(ctx context.Context, c *Client, replies []reply[bool]) error {
	if held(replies) >= c.quorum {
		return nil
	}
	if err := noQuorum(ctx, c, replies); err != nil {
		return err
	}
	return ErrNotHeld
}
