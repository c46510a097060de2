package stats

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i))
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {0, 1}, {99.9, 100}} {
		if got := Percentile(ds, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile([]time.Duration{7}, 99); got != 7 {
		t.Errorf("p99 of one = %v", got)
	}
}

func TestJain(t *testing.T) {
	for _, c := range []struct {
		xs   []int
		want float64
	}{{[]int{5, 5, 5, 5}, 1}, {[]int{8, 0, 0, 0}, 0.25}, {[]int{1, 3}, 0.8}, {[]int{0, 0}, 0}} {
		if got := Jain(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Jain(%v) = %v, want %v", c.xs, got, c.want)
		}
	}
}

func TestSpread(t *testing.T) {
	if s := Of([]float64{3, 1, 2}); s != (Spread{2, 1, 3}) {
		t.Errorf("odd: %+v", s)
	}
	if s := Of([]float64{4, 1, 2, 3}); s != (Spread{2.5, 1, 4}) {
		t.Errorf("even: %+v", s)
	}
}
