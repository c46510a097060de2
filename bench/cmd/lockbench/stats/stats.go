// Package stats holds the summaries of lockbench: percentiles, Jain's
// fairness index, and the spread of a figure over repetitions.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile is the p-th percentile (0–100) of ds by nearest rank: the
// least sample at or above which lie p% of them. 0 when ds is empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Jain is Jain's fairness index of xs: (Σx)² / (n·Σx²), 1 when every
// share is equal, 1/n when one takes all. 0 when nobody got anything.
func Jain(xs []int) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// Spread is the median and the range of a figure over repetitions.
type Spread struct{ Med, Lo, Hi float64 }

// Of is the Spread of xs.
func Of(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Spread{m, s[0], s[len(s)-1]}
}
