package conformance

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testUncontendedCost counts, from MONITOR, the commands that an
// uncontended TryLock and its Unlock run on a server, the scripts' own
// included: the path nobody waits on must stay as cheap as it is, so a
// change that adds a command to it fails here, naming the commands it
// ran. An acquisition is one script (the lock's SET NX, the fencing
// counter's INCR: no mark, see SAFETY.md); a release is a native compare-and-delete
// where the server has one and the Client polls, and otherwise one script
// (the lock read, under Notify a look at the line, the delete).
func testUncontendedCost(t *testing.T, e env) {
	ctx := ctxFor(t, 30*time.Second)
	m := e.client(t).Mutex(name(t))
	cycle := func() {
		l, err := m.TryLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The first cycles probe the native commands, load the scripts and
	// start the fencing counters, which the nodes then agree on.
	cycle()
	cycle()
	mon := monitorNode(t, ctx, e.addrs[0])
	admin := e.admin(t, 0)
	// The commands that name the lock's keys, and every command of a
	// script that names them (TIME names no key), up to a marker: MONITOR
	// shows every client's, and other cases run beside this one; a
	// script's own commands follow its call, marked "lua".
	seen := func(marker string) []string {
		if err := admin.Echo(ctx, marker).Err(); err != nil {
			t.Fatal(err)
		}
		var cmds []string
		ours := false // the last call from a client named the lock's keys
		for line := range mon {
			if strings.Contains(line, `"`+marker+`"`) {
				return cmds
			}
			if !strings.Contains(line, " lua] ") {
				ours = strings.Contains(line, lockKey(m.Name()))
			}
			if ours {
				_, args, _ := strings.Cut(line, `] "`)
				command, _, _ := strings.Cut(args, `"`)
				cmds = append(cmds, strings.ToLower(command))
			}
		}
		t.Fatal("MONITOR ended before the marker")
		return nil
	}
	seen("start")
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	acquire := seen("acquired")
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	release := seen("released")
	t.Logf("an uncontended cycle (%s) ran %d commands: %q, then %q", e.strategy, len(acquire)+len(release), acquire, release)
	if want := []string{"evalsha", "set", "incr"}; !slices.Equal(acquire, want) {
		t.Errorf("an uncontended TryLock ran %q on the server, want %q", acquire, want)
	}
	want := []string{"evalsha", "get", "del"}
	switch {
	case e.strategy == core.Notify:
		want = []string{"evalsha", "get", "zrange", "del"}
	case len(release) == 1 && (release[0] == "delifeq" || release[0] == "delex"):
		want = release // the server's native compare-and-delete
	}
	if !slices.Equal(release, want) {
		t.Errorf("the Unlock of an uncontended lease (%s) ran %q on the server, want %q", e.strategy, release, want)
	}
}

// monitorNode returns the lines MONITOR shows of what the server at addr
// runs, until the test ends.
func monitorNode(t *testing.T, ctx context.Context, addr string) <-chan string {
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		t.Fatalf("MONITOR: %q, %v", line, err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	return lines
}
