package core

import (
	"fmt"

	"github.com/redlockgo/redlock/driver"
)

// newNotifier checks that every node can deliver keyspace notifications.
func newNotifier(c *Client) (waiter, error) {
	for i, n := range c.nodes {
		if _, ok := n.d.(driver.Notifier); !ok || n.d.Protocol() != 3 {
			return nil, fmt.Errorf("%w: node %d uses driver %s, which speaks RESP%d; the Notify wait strategy needs RESP3 keyspace notifications; use WithWaitStrategy(Poll) with this driver",
				ErrNotifyUnsupported, i, n.d.Name(), n.d.Protocol())
		}
	}
	return poller{}, nil // TODO(notify): replaced by the keyspace-notification waiter.
}
