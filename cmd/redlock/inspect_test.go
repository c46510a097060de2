package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// The JSON fields that docs/command.md documents, spelled out apart from
// inspect.go's, so that renaming one there fails here.
type (
	inspectedLock struct {
		Name    string `json:"name"`
		Kind    string `json:"kind"`
		State   string `json:"state"`
		Error   string `json:"error"`
		Holder  string `json:"holder"`
		Owned   bool   `json:"owned"`
		Holds   int    `json:"holds"`
		Token   uint64 `json:"token"`
		TTLMs   int64  `json:"ttl_ms"`
		Nodes   int    `json:"nodes"`
		Waiting int    `json:"waiting"`
		PerNode []struct {
			Node  string `json:"node"`
			Error string `json:"error"`
			Line  []struct {
				ID       string `json:"id"`
				LapsesMs int64  `json:"lapses_ms"`
			} `json:"line"`
		} `json:"per_node"`
	}
	inspectedRW struct {
		State      string `json:"state"`
		Writer     string `json:"writer"`
		ReadLeases []struct {
			ID    string `json:"id"`
			TTLMs int64  `json:"ttl_ms"`
		} `json:"read_leases"`
	}
	inspectedSemaphore struct {
		State  string `json:"state"`
		Size   int    `json:"size"`
		InUse  int    `json:"in_use"`
		Token  uint64 `json:"token"`
		Leases []struct {
			Holder  string `json:"holder"`
			Permits []int  `json:"permits"`
			TTLMs   int64  `json:"ttl_ms"`
		} `json:"leases"`
	}
)

// inspectJSON runs redlock inspect --json with args on nodes, checks its
// exit status, and decodes its output into out.
func inspectJSON(t *testing.T, nodes []string, code int, out any, args ...string) *proc {
	t.Helper()
	p := redlockExits(t, nodes, "", code, "", append([]string{"inspect", "--json"}, args...)...)
	if err := json.Unmarshal(p.stdout.Bytes(), out); err != nil {
		t.Fatalf("redlock %q printed no JSON: %v\n%s", p.cmd.Args[1:], err, &p.stdout)
	}
	return p
}

// onServers returns what a test of a subcommand on the real servers
// starts from: a context of at most 10s, the first n servers, a Client of
// the library on them as an application would hold locks (with opts,
// waiting by Poll, which every driver can), and a name no other test uses.
func onServers(t *testing.T, n int, opts ...core.Option) (context.Context, []string, *core.Client, string) {
	t.Helper()
	nodes := testNodes(t)[:n]
	var urls []string
	for _, node := range nodes {
		urls = append(urls, "redis://"+node)
	}
	c, closeClient, err := connect(drivers[0].open, urls, append([]core.Option{core.WithWaitStrategy(core.Poll)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeClient)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx, nodes, c, lockName(t)
}

func TestInspectMutex(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 3, core.WithOwner("worker-7"), core.WithTTL(10*time.Second))
	free := lockName(t)
	lease, err := c.Mutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(ctx)

	var got []inspectedLock
	inspectJSON(t, nodes, 0, &got, name, free)
	if len(got) != 2 {
		t.Fatalf("got %d objects, want one per name: %+v", len(got), got)
	}
	held := got[0]
	if held.Name != name || held.Kind != "mutex" || held.State != "held" || held.Holder != "worker-7" || !held.Owned || held.Holds != 1 ||
		held.Token != lease.Token() || held.Nodes != 3 || len(held.PerNode) != 3 || held.Error != "" {
		t.Errorf("held by worker-7 with token %d on 3 nodes, inspect says %+v", lease.Token(), held)
	}
	if held.TTLMs <= 5000 || held.TTLMs > 10000 {
		t.Errorf("ttl_ms %d, want at most the 10s TTL and not much less", held.TTLMs)
	}
	if f := got[1]; f.Name != free || f.State != "free" || f.Holder != "" || f.Nodes != 0 || f.TTLMs != 0 || f.Error != "" {
		t.Errorf("a name nobody holds: %+v, want free", f)
	}
}

// TestInspectFairLine holds a FairMutex with a waiter in line: the table
// names the holder and the waiter, and so does the JSON.
func TestInspectFairLine(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 1)
	m := c.FairMutex(name)
	lease, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Unlock(ctx)
	waitCtx, stopWaiting := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() {
		l, err := m.Lock(waitCtx)
		if err == nil {
			l.Unlock(ctx)
		}
		waited <- err
	}()
	defer func() { stopWaiting(); <-waited }()
	for s, _ := m.State(ctx); s.Waiting != 1; s, _ = m.State(ctx) {
		select {
		case err := <-waited:
			t.Fatalf("the waiter's Lock returned %v while the lock was held", err)
		case <-time.After(10 * time.Millisecond):
		}
	}

	var got []inspectedLock
	inspectJSON(t, nodes, 0, &got, "--kind", "fair", name)
	if len(got) != 1 || got[0].Kind != "fair" || got[0].Holder != lease.ID() || got[0].Waiting != 1 ||
		len(got[0].PerNode) != 1 || len(got[0].PerNode[0].Line) != 1 || got[0].PerNode[0].Line[0].ID == "" || got[0].PerNode[0].Line[0].LapsesMs <= 0 {
		t.Fatalf("held by %s with one waiter in line, inspect says %+v", lease.ID(), got)
	}
	waiter := got[0].PerNode[0].Line[0].ID

	p := redlockExits(t, nodes, "", 0, "", "inspect", "--kind", "fair", name)
	lines := strings.Split(p.stdout.String(), "\n")
	if len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME STATE HOLDER TOKEN TTL NODES WAITING" {
		t.Fatalf("no table header:\n%s", &p.stdout)
	}
	row := strings.Fields(lines[1])
	if len(row) != 7 || row[0] != name || row[1] != "held" || row[2] != lease.ID() || row[5] != "1/1" || row[6] != "1" {
		t.Errorf("row %q, want %s held by %s on 1/1 node with 1 waiting", lines[1], name, lease.ID())
	}
	if !strings.Contains(p.stdout.String(), waiter) {
		t.Errorf("the table does not name the waiter %s:\n%s", waiter, &p.stdout)
	}
}

func TestInspectRWMutexReaders(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 1)
	rw := c.RWMutex(name)
	ids := map[string]bool{}
	for range 2 {
		l, err := rw.RLock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		ids[l.ID()] = true
	}
	var got []inspectedRW
	inspectJSON(t, nodes, 0, &got, "--kind", "rw", name)
	if len(got) != 1 || got[0].State != "held" || got[0].Writer != "" || len(got[0].ReadLeases) != 2 {
		t.Fatalf("two readers, inspect says %+v", got)
	}
	for _, r := range got[0].ReadLeases {
		if !ids[r.ID] || r.TTLMs <= 0 {
			t.Errorf("reader %+v, want one of %v with a TTL", r, ids)
		}
	}
}

func TestInspectSemaphore(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 1)
	s := c.Semaphore(name, 3)
	var leases []*core.Lease
	for _, n := range []int{2, 1} {
		l, err := s.TryAcquire(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		leases = append(leases, l)
	}
	var got []inspectedSemaphore
	inspectJSON(t, nodes, 0, &got, "--kind", "semaphore", "--permits", "3", name)
	if len(got) != 1 || got[0].State != "full" || got[0].Size != 3 || got[0].InUse != 3 || got[0].Token != leases[1].Token() || len(got[0].Leases) != 2 {
		t.Fatalf("3 permits in use by 2 leases, the last with token %d; inspect says %+v", leases[1].Token(), got)
	}
	permits := 0
	for _, l := range got[0].Leases {
		permits += len(l.Permits)
		if l.TTLMs <= 0 || !strings.Contains(leases[0].ID()+leases[1].ID(), "-"+l.Holder+"-") {
			t.Errorf("lease %+v: want a TTL, and a holder out of the permit IDs %s, %s", l, leases[0].ID(), leases[1].ID())
		}
	}
	if permits != 3 {
		t.Errorf("the leases list %d permits, want 3: %+v", permits, got[0].Leases)
	}
}

// TestInspectUnreachableNode inspects three nodes, one on a closed port:
// the state is known from the other two, the output names the node, and
// the exit status is 1.
func TestInspectUnreachableNode(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	nodes := append(testNodes(t)[:2:2], closed)
	name := lockName(t)

	var got []inspectedLock
	inspectJSON(t, nodes, 1, &got, name)
	if len(got) != 1 || got[0].State != "free" || len(got[0].PerNode) != 3 || got[0].PerNode[2].Node != "redis://"+closed ||
		got[0].PerNode[2].Error == "" || got[0].PerNode[0].Error != "" {
		t.Errorf("with node 3 (%s) down, inspect says %+v", closed, got)
	}
	p := redlockExits(t, nodes, "", 1, "", "inspect", name)
	if want := "node 3 (redis://" + closed + ") did not answer"; !strings.Contains(p.stdout.String(), want) {
		t.Errorf("the table does not say %q:\n%s", want, &p.stdout)
	}
}

// TestInspectUsage needs no server: inspect refuses before connecting.
func TestInspectUsage(t *testing.T) {
	t.Parallel()
	nowhere := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		nodes []string
		args  []string
		want  string
	}{
		{nowhere, []string{"inspect"}, "want at least one NAME"},
		{nil, []string{"inspect", "x"}, "no nodes: give --nodes"},
		{nowhere, []string{"inspect", "--kind", "latch", "x"}, "want mutex, fair, rw or semaphore"},
		{nowhere, []string{"inspect", "--permits", "3", "x"}, "with --kind semaphore"},
		{nowhere, []string{"inspect", "x", "--nope"}, "flag provided but not defined: -nope"},
		{nowhere, []string{"inspect", "--strategy", "poll", "x"}, "flag provided but not defined: -strategy"},
		{nowhere, []string{"inspect", "a}b"}, "a}b"},
	} {
		p := redlockExits(t, tc.nodes, "", 2, tc.want, tc.args...)
		if !strings.Contains(p.stderr.String(), "usage: redlock inspect") {
			t.Errorf("redlock %q printed no usage:\n%s", tc.args, &p.stderr)
		}
	}
}

// TestInspectMetadata holds a Mutex, an RWMutex read lease and Semaphore
// permits with metadata: the table's notes and the JSON show it.
func TestInspectMetadata(t *testing.T) {
	t.Parallel()
	const meta = `host-7 pid 42 "ü"`
	ctx, nodes, c, name := onServers(t, 3, core.WithMetadata(meta))
	rwName, semName := lockName(t)+"-rw", lockName(t)+"-sem"
	for _, acquire := range []func() (*core.Lease, error){
		func() (*core.Lease, error) { return c.Mutex(name).TryLock(ctx) },
		func() (*core.Lease, error) { return c.RWMutex(rwName).TryRLock(ctx) },
		func() (*core.Lease, error) { return c.Semaphore(semName, 2).TryAcquire(ctx, 1) },
	} {
		l, err := acquire()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
	}
	var m []struct {
		Metadata string `json:"metadata"`
	}
	inspectJSON(t, nodes, 0, &m, name)
	var rw []struct {
		ReadLeases []struct {
			Metadata string `json:"metadata"`
		} `json:"read_leases"`
	}
	inspectJSON(t, nodes, 0, &rw, "--kind", "rw", rwName)
	var sem []struct {
		Leases []struct {
			Metadata string `json:"metadata"`
		} `json:"leases"`
	}
	inspectJSON(t, nodes, 0, &sem, "--kind", "semaphore", semName)
	if len(m) != 1 || m[0].Metadata != meta || len(rw) != 1 || len(rw[0].ReadLeases) != 1 || rw[0].ReadLeases[0].Metadata != meta ||
		len(sem) != 1 || len(sem[0].Leases) != 1 || sem[0].Leases[0].Metadata != meta {
		t.Errorf("metadata %q: inspect --json says %+v, %+v, %+v", meta, m, rw, sem)
	}
	p := redlockExits(t, nodes, "", 0, "", "inspect", name)
	if want := name + `: holder's metadata "host-7 pid 42 \"ü\""`; !strings.Contains(p.stdout.String(), want) {
		t.Errorf("inspect printed\n%s\nwant a line %s", &p.stdout, want)
	}
}
