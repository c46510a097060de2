package bench_test

import (
	"context"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
)

// BenchmarkPausedMinority is a Mutex contended by 10 Clients on a
// three-node quorum while one node at a time is paused (SIGSTOP, as a
// stalled server or a VM paused by its host): each node in turn for
// pausedFor, then resumed. The nodes must be local processes of this
// user. It compares the ways to wait in one run (b.N acquisitions each);
// a waiter must not lose more to a paused minority under Notify than
// under Poll.
func BenchmarkPausedMinority(b *testing.B) {
	const pausedFor = time.Second
	addrs := testenv.Nodes(b)[:3]
	pids := make([]int, len(addrs))
	for i, a := range addrs {
		pids[i] = processID(b, a)
	}
	for _, w := range benchWaits[:2] {
		b.Run(w.name, func(b *testing.B) {
			name := "bench-paused-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			acquirers := make([]acquirer, benchClients)
			for i := range acquirers {
				acquirers[i] = benchClient(b, addrs, w.opts...).Mutex(name, benchTTL).Lock
			}
			stop := make(chan struct{})
			paused := make(chan struct{})
			go func() {
				defer close(paused)
				for i := 0; ; i = (i + 1) % len(pids) {
					syscall.Kill(pids[i], syscall.SIGSTOP)
					select {
					case <-stop:
						syscall.Kill(pids[i], syscall.SIGCONT)
						return
					case <-time.After(pausedFor):
					}
					syscall.Kill(pids[i], syscall.SIGCONT)
				}
			}()
			r := contend(b, acquirers)
			close(stop)
			<-paused
			r.report(b, 1)
		})
	}
}

// processID is the process of the server at addr, from INFO.
func processID(b *testing.B, addr string) int {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(context.Background(), "server").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				b.Fatal(err)
			}
			return pid
		}
	}
	b.Fatalf("no process_id in INFO of %s", addr)
	return 0
}
