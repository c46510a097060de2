package main

import (
	"strings"
	"testing"

	"github.com/redlockgo/redlock/spec"
)

// A wrapped method asks run with the operation's name, its own name and
// the call's KEYS, and calls the inner driver with every parameter in
// order; the reply type is the contract's.
func TestFaultMethod(t *testing.T) {
	expect(t, "script", faultMethod(take, "Take"), `
// Take asks the hook, then runs the inner driver's Take.
func (d *Driver) Take(ctx context.Context, lock string, token string, ttl time.Duration, n int64) (driver.TakeReply, error) {
	return run(ctx, d, "Take", "Take", []string{lock}, nil, func(ctx context.Context) (driver.TakeReply, error) {
		return d.inner.Take(ctx, lock, token, ttl, n)
	})
}`)
}

// A native is faulted under its operation's name, so that one rule covers
// the script and the commands that stand in for it.
func TestFaultMethodNative(t *testing.T) {
	got := code(faultMethod(oneField(spec.Int), "TakeSet"))
	if !strings.Contains(got, `func (d *Driver) TakeSet(ctx context.Context, lock string, token string, ttl time.Duration, n int64) (int64, error) {`) ||
		!strings.Contains(got, `run(ctx, d, "Take", "TakeSet", []string{lock},`) || !strings.Contains(got, "d.inner.TakeSet(ctx, lock, token, ttl, n)") {
		t.Errorf("got:\n%s", got)
	}
}

// Every script method and every native gets a wrapped method, or the
// wrapper would not satisfy driver.Scripts.
func TestFaultsCoverEveryMethod(t *testing.T) {
	got := code(faults([]spec.Op{take, {Name: "Put", Script: "put", Keys: []spec.Param{{Name: "names", Type: spec.Strings}}, Reply: []spec.Field{{Name: "Only", Type: spec.Int}},
		Natives: []spec.Native{{Name: "Del", Command: []string{"DEL", "$names"}}}}}))
	for _, m := range []string{") Take(", ") Put(", ") PutDel(", `run(ctx, d, "Put", "PutDel", names,`} {
		if !strings.Contains(got, m) {
			t.Errorf("missing %q in:\n%s", m, got)
		}
	}
}
