package quorum

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// serverError stands for an error reply of the server.
type serverError string

func (e serverError) Error() string { return string(e) }

// clusterDriver is a Cluster driver whose CLUSTER NODES answers are
// scripted: each call to Replicas takes the next one (the last repeats).
type clusterDriver struct {
	driver.Driver // unused methods panic

	mu      sync.Mutex
	counts  []func() (driver.Replicas, error)
	counted int
	waits   []string // the markers WaitReplicas was asked about
	acks    int      // what WaitReplicas answers
}

func (d *clusterDriver) Name() string       { return "fake-cluster" }
func (d *clusterDriver) SingleServer() bool { return false }
func (d *clusterDriver) IsServerError(err error) bool {
	var se serverError
	return errors.As(err, &se)
}

func (d *clusterDriver) Replicas(context.Context) (driver.Replicas, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.counts[min(d.counted, len(d.counts)-1)]
	d.counted++
	return f()
}

func (d *clusterDriver) WaitReplicas(_ context.Context, marker string, n int, _ time.Duration) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waits = append(d.waits, marker)
	return d.acks, nil
}

func (d *clusterDriver) waited() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.waits)
}

func oneMasterWithAReplica() (driver.Replicas, error) {
	return driver.Replicas{Slots: []driver.SlotReplicas{{First: 0, Last: 16383, Replicas: 1}}}, nil
}

// A transient error reply to CLUSTER NODES (BUSY while a script runs on
// the node asked, LOADING on a node that restarts) is no answer: the count
// is asked again at the next grant, and a master with a replica is then
// waited for. Only a refusal (NOPERM, an unknown command) is taken as "no
// replicas", for good.
func TestTransientCountErrorKeepsWaitingForReplicas(t *testing.T) {
	d := &clusterDriver{counts: []func() (driver.Replicas, error){
		func() (driver.Replicas, error) {
			return driver.Replicas{}, serverError("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
		},
		oneMasterWithAReplica,
	}}
	g, err := NewGroup([]driver.Driver{d}, slog.New(slog.DiscardHandler), -1)
	if err != nil {
		t.Fatal(err)
	}
	tm := Timing{TTL: 10 * time.Second, NodeTimeout: 50 * time.Millisecond, DriftFactor: 0.01}
	acked := []string{"{lock}:acked"}
	all := func(int) bool { return true }

	// The first grant meets the busy node and does not count.
	if errs := NotOnReplicas(context.Background(), g, tm, acked, all); errs == nil || !errors.Is(errs[0], ErrReplicasBehind) {
		t.Fatalf("a grant whose count of replicas met BUSY: %v, want ErrReplicasBehind (WAIT sent %d times)", errs, d.waited())
	}

	// The script ended; CLUSTER NODES now lists the master's replica.
	// Well past the second a count is used for, a grant must wait for it.
	time.Sleep(recountReplicas + 200*time.Millisecond)
	errs := NotOnReplicas(context.Background(), g, tm, acked, all)
	var got error
	if errs != nil {
		got = errs[0]
	}
	if d.waited() == 0 || !errors.Is(got, ErrReplicasBehind) {
		t.Fatalf("a grant %s after one BUSY reply to CLUSTER NODES: WAIT sent %d times, CLUSTER NODES sent %d times, error %v; "+
			"want a WAIT for the master's replica (which acknowledges nothing here) and ErrReplicasBehind",
			recountReplicas+200*time.Millisecond, d.waited(), d.counted, got)
	}
}
