package auto

import (
	"cmp"
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// clients maps each driver to the module of the client it wraps.
var clients = map[string]string{
	"goredis": "github.com/redis/go-redis/v9",
	"redigo":  "github.com/gomodule/redigo",
	"rueidis": "github.com/redis/rueidis",
}

// TestSelectedByTag checks, from the test binary's own build information,
// that the build tags chose the driver and that only its client is linked.
func TestSelectedByTag(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information in this binary")
	}
	var tags []string
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			tags = strings.Split(s.Value, ",")
		}
	}
	want := "goredis"
	switch {
	case slices.Contains(tags, "redlock_redigo"):
		want = "redigo"
	case slices.Contains(tags, "redlock_rueidis"):
		want = "rueidis"
	}
	if Name != want {
		t.Errorf("tags %q: Name = %q, want %q", tags, Name, want)
	}

	// Test binaries carry no module list, so ask go list what an
	// application importing this package links.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found; cannot list the package's dependencies")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-tags="+strings.Join(tags, ","), ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	for name, module := range clients {
		linked := slices.ContainsFunc(deps, func(p string) bool { return p == module || strings.HasPrefix(p, module+"/") })
		if linked != (name == want) {
			t.Errorf("tags %q: %s linked = %v, want %v", tags, module, linked, name == want)
		}
	}
}

func TestOpen(t *testing.T) {
	d, err := Open(cmp.Or(strings.Split(os.Getenv("REDLOCK_TEST_NODES"), ",")[0], "localhost:6379"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Name() != Name {
		t.Errorf("Open(...).Name() = %q, want %q", d.Name(), Name)
	}
	// The wrapper must not hide the optional interfaces of the driver it holds.
	_, inner := any(d.(*owned).Driver).(driver.Notifier)
	if _, outer := d.(driver.Notifier); outer != inner {
		t.Errorf("driver.Notifier: wrapper %v, %s driver %v", outer, Name, inner)
	}

	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m := c.Mutex("auto")
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("second TryLock: %v, want ErrNotAcquired", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Closing the client closes the driver, which closes the client Open made.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Release(ctx, "redlock:{auto}", "nobody"); err == nil {
		t.Error("a call on the driver after Close succeeded: the client Open made is still open")
	}
}
