package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("redlock: exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		"on an embedded miniredis",
		"\nMutex      alice holds",
		"\nhand-off   bob waits in Lock; alice unlocks; bob holds it ",
		"\nfencing    five leases in turn, from four clients, draw rising tokens: ",
		"Done closes ", "and Err() is ErrLost",
		"\nFairMutex  bob, carol and dave line up while alice holds; served in the order they came: bob, carol, dave",
		"\nRWMutex    3 readers hold it at once",
		"\nSemaphore  2 permits",
		"\nLatch      alice waits on a count of 3",
		"\nMultiLock  alice holds {a, b}",
		"\ndrivers    lock, contend, unlock, fence with each client library built in: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, out)
		}
	}
	for _, d := range drivers {
		if !strings.Contains(out, " "+d.name+" ") {
			t.Errorf("the demo's output does not name the driver %s:\n%s", d.name, out)
		}
	}
	if strings.Contains(out, "FAIL") {
		t.Errorf("a step failed:\n%s", out)
	}
}

// TestDemoOnServers runs the demo on the real servers with every client
// library built in: the default one on a quorum of three, the others on
// one node.
func TestDemoOnServers(t *testing.T) {
	t.Parallel()
	nodes := testNodes(t)
	for i, d := range drivers {
		// The default library on a quorum of three, the others on one node.
		n := nodes[:1]
		if i == 0 {
			n = nodes[:3]
		}
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			args := []string{"demo", "--driver", d.name, "--nodes", strings.Join(n, ",")}
			if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Errorf("redlock %q: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, &stdout, &stderr)
			}
		})
	}
}

// TestPrefixFlag holds a lock under another key prefix: inspect, run and
// release find it with --prefix.
func TestPrefixFlag(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 1, core.WithKeyPrefix("other:"), core.WithTTL(time.Minute))
	l, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []inspectedLock
	inspectJSON(t, nodes, 0, &got, "--prefix", "other:", name)
	if len(got) != 1 || got[0].State != "held" || got[0].Holder != l.ID() {
		t.Errorf("held by %s under the prefix other:, inspect --prefix other: says %+v", l.ID(), got)
	}
	redlockExits(t, nodes, "", exitNotAcquired, "not acquired (--try)", "run", "--prefix", "other:", "--try", name, "--", "true")
	redlockExits(t, nodes, "", 0, "", "release", "--prefix", "other:", "--force", "--yes", name)
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Errorf("Extend after redlock release --prefix other: --force: %v, want ErrLost", err)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"demo", "extra"}, 2, "unexpected arguments"},
		{[]string{"demo", "--driver", "nope"}, 1, "want one of"},
		{[]string{"help"}, 0, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("redlock %q: exit %d, stderr %q; want exit %d, stderr containing %q", tc.args, code, &stderr, tc.code, tc.stderr)
		}
		if tc.code != 1 && !strings.Contains(stdout.String()+stderr.String(), "usage: redlock") {
			t.Errorf("redlock %q printed no usage:\n%s%s", tc.args, &stdout, &stderr)
		}
	}
}

// TestMatrixDelegates checks that redlock matrix runs the conformance
// module's matrix command with its flags, and says where it must run.
func TestMatrixDelegates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the matrix command")
	}
	t.Parallel()
	p := startRedlock(t, ".", nil, "matrix", "--nope")
	p.expect(t, 5*time.Minute, 2, "usage: redlock matrix")
	outside := startRedlockEnv(t, t.TempDir(), []string{"GOWORK=off"}, "", "matrix")
	outside.expect(t, time.Minute, 1, "run it inside a clone")
}

// TestImportGraph keeps go run ./cmd/redlock quick to build from an empty
// build cache: without build tags, the command compiles neither the test
// machinery nor the two client libraries that take longest to compile.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, heavy := range []string{
		"github.com/redlockgo/redlock/conformance", "github.com/Shopify/toxiproxy", "github.com/prometheus/",
		"github.com/rs/zerolog", "github.com/anishathalye/porcupine", "github.com/schollz/progressbar",
		"github.com/redis/go-redis", "github.com/redis/rueidis", "golang.org/x/sys/unix",
	} {
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, heavy) {
				t.Errorf("the command imports %s without build tags", p)
				break
			}
		}
	}
}
