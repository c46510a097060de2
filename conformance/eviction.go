package conformance

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// testEvictionReported: on a server with a maxmemory limit and an
// eviction policy that may evict lock keys (allkeys-lru), the Client's
// first lease logs it at warn level, saying what to set, and Ping returns
// ErrEviction; with noeviction, Ping returns nil. A driver that cannot
// reach the server's CONFIG (no driver.Notifier) reports nothing.
func testEvictionReported(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	pair := ownServers(t, ctx, e, 0)
	master := pair.Masters[0]
	admin := plain(t, master)
	set := func(param, value string) {
		if err := admin.ConfigSet(ctx, param, value).Err(); err != nil {
			t.Fatal(err)
		}
	}
	set("maxmemory", "100mb")
	set("maxmemory-policy", "allkeys-lru")
	log := &lockedBuffer{}
	// A patient Client: the master waits for its replica to acknowledge.
	c := e.clientOn(t, []string{master}, core.WithLogger(slog.New(slog.NewTextHandler(log, nil))), core.WithNodeTimeout(time.Second))
	l := mustLock(t, ctx, c.Mutex(n).Lock)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	_, reaches := e.drivers(t, []string{master})[0].(driver.Notifier)
	err := c.Ping(ctx)
	if !reaches {
		if err != nil {
			t.Fatalf("Ping over %s, which cannot read CONFIG: %v", e.h.Driver, err)
		}
		return
	}
	const advice = "maxmemory-policy allkeys-lru with maxmemory 104857600: set maxmemory-policy noeviction"
	if !errors.Is(err, core.ErrEviction) || !strings.Contains(err.Error(), advice) {
		t.Fatalf("Ping on a server with allkeys-lru: got %v, want ErrEviction saying %q", err, advice)
	}
	if !eventually(5*time.Second, func() bool { return strings.Contains(log.String(), advice) }) {
		t.Errorf("the Client's first lease logged no warning %q:\n%s", advice, log.String())
	}
	set("maxmemory-policy", "noeviction")
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping with noeviction: %v", err)
	}
}

// lockedBuffer is a bytes.Buffer that a logger may write from several
// goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
