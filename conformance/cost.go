package conformance

import (
	"bufio"
	"context"
	"fmt"
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
	// start the fencing counters, which the nodes then agree on. A node
	// that answered late on a loaded machine leaves its counter behind, and
	// the next cycle raises it (fence_raise.lua): the steady state is the
	// best of three cycles.
	cycle()
	cycle()
	seen := lockCommands(t, ctx, e, m.Name())
	var problems []string
	for range 3 {
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
		problems = uncontendedProblems(e, acquire, release)
		if len(problems) == 0 {
			return
		}
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// uncontendedProblems compares an uncontended cycle's commands with the
// expected ones.
func uncontendedProblems(e env, acquire, release []string) (problems []string) {
	if want := []string{"evalsha", "set", "incr"}; !slices.Equal(acquire, want) {
		problems = append(problems, fmt.Sprintf("an uncontended TryLock ran %q on the server, want %q", acquire, want))
	}
	want := []string{"evalsha", "get", "del"}
	switch {
	case e.strategy == core.Notify:
		want = []string{"evalsha", "get", "zpopmin", "del"}
	case len(release) == 1 && (release[0] == "delifeq" || release[0] == "delex"):
		want = release // the server's native compare-and-delete
	}
	if !slices.Equal(release, want) {
		problems = append(problems, fmt.Sprintf("the Unlock of an uncontended lease (%s) ran %q on the server, want %q", e.strategy, release, want))
	}
	return problems
}

// testHandOffCost counts, from MONITOR, the commands that a hand-off runs
// on a server, the scripts' own included: from just before holder A's
// Unlock, with waiter B queued, to B's Lock returning its lease. A
// contended acquisition pays for them, so a change that adds a command to
// a hand-off fails here, naming the commands it ran.
func testHandOffCost(t *testing.T, e env) {
	ctx := ctxFor(t, 30*time.Second)
	n := name(t)
	a, b := e.client(t).Mutex(n), e.client(t).Mutex(n)
	handOff := func() {
		l := mustLock(t, ctx, a.Lock)
		done := startLock(ctx, b.Lock)
		awaitQueued(t, ctx, e, 0, queueKey(n), done)
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if res.err != nil {
			t.Fatalf("B's Lock after A's Unlock: %v", res.err)
		}
		if err := res.l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	handOff() // loads the scripts and starts the fencing counter
	seen := lockCommands(t, ctx, e, n)
	l := mustLock(t, ctx, a.Lock)
	seen("held")
	done := startLock(ctx, b.Lock)
	awaitQueued(t, ctx, e, 0, queueKey(n), done)
	joined := seen("queued")
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("B's Lock after A's Unlock: %v", res.err)
	}
	got := seen("handed")
	want := []string{
		"evalsha", // A's Unlock: release_wake.lua
		"get",     // the lock: A's token?
		"zpopmin", // the head of the line, taken out of it: B's ticket
		"hget",    // B's ticket, a field of the line's tickets: its deadline and grant (TTL, token, secret)
		"time",    // the server's clock: has B's ticket lapsed? (Redis 7.0 has no expiry per field)
		"incr",    // the fencing counter: B's token
		"publish", // the grant to B's Client's own channel: its secret here says this is one server, where no Client subscribes a sharded one; the count of receivers says B's Client listens
		"set",     // the lock: B's token, for B's TTL (B's ticket, unwritten, names the grant as long as it lasts: see ticketEnd in lib/tickets.lua)
	}
	if !slices.Equal(got, want) {
		t.Errorf("a hand-off ran %q on the server, want %q", got, want)
	}
	// Left out: the case's own probes, and the PEXPIREs that lengthen the
	// line and its tickets (GT, then NX where that did nothing), which the
	// clock decides.
	// B's first attempt, which does not queue, and its Client's
	// subscription to its own channel come before: in an earlier hand-off
	// of this case, as in a Client that waited before.
	joined = slices.DeleteFunc(joined, func(c string) bool {
		return c == "zcard" || c == "pubsub" || c == "pexpire"
	})
	want = []string{
		"evalsha", // B's attempt: mutex_acquire.lua, joining the line, once: B watches no keyspace event
		"get",     // the lock: held, by whom (a later token of B's?)
		"pttl",    // the lock: how long B may wait
		"time",    // the server's clock, for the ticket's deadline (Redis 7.0 has no expiry per field)
		"hsetnx",  // B's ticket, where B has none here (else it reads it: left, or naming a later token of B's?): its deadline and grant (TTL, token, secret)
		"zadd",    // the line: B's ticket
	}
	if !slices.Equal(joined, want) {
		t.Errorf("a Lock of a held lock ran %q on the server to join the line, want %q", joined, want)
	}
	// What a contended Lock's lease pays as it ends: B's lease came from
	// the line, so its Unlock marks B's ticket as it hands on to C.
	done = startLock(ctx, e.client(t).Mutex(n).Lock)
	awaitQueued(t, ctx, e, 0, queueKey(n), done)
	seen("queued again")
	if err := res.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if res = <-done; res.err != nil {
		t.Fatalf("C's Lock after B's Unlock: %v", res.err)
	}
	defer res.l.Unlock(ctx)
	got = seen("handed on")
	want = []string{
		"evalsha",    // B's Unlock: release_or_mark.lua, which marks B's ticket always, as B's attempts carry its lease's token
		"get",        // the lock: B's token?
		"hrandfield", // 4 tickets at random, to drop those that lapsed (none here); a tickets key of another type fails the call here, before it writes
		"time",       // the server's clock: has one of them lapsed?
		"zpopmin",    // C's ticket, out of the line
		"hget",       // C's ticket: its deadline (the clock read above) and grant
		"incr",       // C's token
		"publish",    // the grant to C's Client
		"set",        // the lock: C's token
		"hset",       // B's ticket: left, for B's TTL
		"pexpire",    // the tickets hash, which the sample showed was there (so it has an expiry), outlives the mark: GT
	}
	if !slices.Equal(got, want) {
		t.Errorf("the Unlock of a lease from the line, with a waiter, ran %q on the server, want %q", got, want)
	}
}

// lockCommands reads MONITOR on the cell's first node and returns seen,
// which returns the commands that named the keys of the lock called name,
// and every command of a script that named them (TIME names no key), up
// to a marker it sends, named after the lock: MONITOR shows every
// client's, and other cases (and cells) run beside this one on the server;
// a script's own commands follow its call, marked "lua".
func lockCommands(t *testing.T, ctx context.Context, e env, name string) (seen func(marker string) []string) {
	mon := monitorNode(t, ctx, e.addrs[0])
	admin := e.admin(t, 0)
	return func(marker string) []string {
		marker = name + " " + marker // the cells that share the server send theirs too
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
				ours = strings.Contains(line, lockKey(name))
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
