package rueidis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

// waitMigrating waits for the replicas of both masters of a slot that
// migrates to target, as marker's write was answered ASK: a grant ran on
// the old master where its keys were still there, or on target after an
// ASK, so each master writes a marker and waits, and the fewer
// acknowledgements count. target takes marker after ASKING; the old
// master, the node that answers ASK for marker, refuses a key of the
// slot it does not hold, so it takes a marker of a slot it serves. Where
// a node cannot be found, it returns asked, which says to ask again.
func (d *Driver) waitMigrating(ctx context.Context, asked error, target, marker string, n int, timeout time.Duration) (int, error) {
	nodes := d.client.Nodes()
	to, ok := nodes[target]
	if !ok {
		return 0, asked // a node the client does not know yet: asked again
	}
	acked, err := waitOn(ctx, to, true, marker, n, timeout)
	if err != nil {
		return 0, err
	}
	var source rueidis.Client
	for _, c := range nodes {
		_, ask, _ := adapter.Redirect(c.Do(ctx, c.B().Get().Key(marker).Build()).Error())
		if ask {
			source = c
		}
	}
	if source == nil {
		return 0, asked // the migration ended: asked again
	}
	for i := range adapter.MarkersBeside {
		there, err := waitOn(ctx, source, false, adapter.MarkerBeside(marker, i), n, timeout)
		if _, _, redirected := adapter.Redirect(err); !redirected {
			return min(acked, there), err
		}
	}
	return 0, fmt.Errorf("rueidis: none of %d markers is in a slot the master migrating %q serves", adapter.MarkersBeside, marker)
}
