package core

import (
	"math"
	"time"

	"github.com/redlockgo/redlock/internal/line"
)

// Backoff is exponential backoff with full jitter: before retry n (from 0)
// a caller sleeps a uniformly random time in [0, min(Cap, Base×Multiplier^n)),
// so that competing clients spread out instead of retrying in step.
// WithBackoff and New take one with 0 < Base <= Cap <= a year and a finite
// Multiplier >= 1, and report any other with ErrInvalid.
type Backoff struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// Delay is the random sleep before retry n.
func (b Backoff) Delay(n int) time.Duration { return line.Backoff(b).Delay(n) }

func (b Backoff) validate() error {
	if b.Base <= 0 || b.Cap < b.Base || b.Cap > maxDuration || !(b.Multiplier >= 1) || math.IsInf(b.Multiplier, 1) {
		return invalid("backoff %+v needs 0 < Base <= Cap <= %v and a finite Multiplier >= 1", b, maxDuration)
	}
	return nil
}
