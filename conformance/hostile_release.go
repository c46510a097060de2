package conformance

import (
	"context"
	"testing"
)

// stringsUnder is the value of every string key under prefix, by node and
// key.
func (e env) stringsUnder(t *testing.T, ctx context.Context, prefix string) map[string]string {
	t.Helper()
	values := map[string]string{}
	for i := range e.addrs {
		for _, k := range e.keysUnder(t, ctx, i, prefix) {
			if v, err := e.admin(t, i).Get(ctx, k).Result(); err == nil {
				values[e.addrs[i]+" "+k] = v
			}
		}
	}
	return values
}
