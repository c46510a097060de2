package core

import (
	"log/slog"
	"testing"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// namedDriver is a driver of which only Name is called.
type namedDriver struct{ driver.Driver }

func (namedDriver) Name() string { return "test" }

// newTestClient is a Client with options o over drivers, or over nodes
// nodes that only name themselves; it sends nothing.
func newTestClient(t testing.TB, o options, nodes int, drivers ...driver.Driver) *Client {
	for range nodes {
		drivers = append(drivers, namedDriver{})
	}
	q, err := quorum.NewGroup(drivers, slog.New(slog.DiscardHandler), 0)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{id: "cid", q: q, opts: o}
}
