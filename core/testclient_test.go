package core

import (
	"testing"

	"github.com/redlockgo/redlock/driver"
)

// newTestClient is a Poll Client over one driver of which nothing is
// called; it sends nothing.
func newTestClient(t testing.TB) *Client {
	c, err := New([]Driver{struct{ driver.Driver }{}}, WithWaitStrategy(Poll))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
