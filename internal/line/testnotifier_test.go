package line

import (
	"log/slog"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// namedDriver is a driver of which only Name is called.
type namedDriver struct{ driver.Driver }

func (namedDriver) Name() string { return "test" }

// newTestNotifier is the Notifier of a Client "cid" over drivers, or over
// nodes nodes that only name themselves; it sends nothing.
func newTestNotifier(t testing.TB, nodes int, drivers ...driver.Driver) *Notifier {
	for range nodes {
		drivers = append(drivers, namedDriver{})
	}
	g, err := quorum.NewGroup(drivers, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Notifier{g: g, id: "cid", log: slog.New(slog.DiscardHandler), nodeTimeout: 50 * time.Millisecond,
		keys: map[string]*keyWaiters{}, tickets: map[string]*Ticket{}, shards: map[string]*shardSub{}}
}
