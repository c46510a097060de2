package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// startServer starts a redis-server of its own on a free loopback port,
// without persistence, and returns its address and how to stop it.
func startServer(bin string) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "lockbench-")
	if err != nil {
		return "", nil, err
	}
	pidfile := filepath.Join(dir, "redis.pid")
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "yes", "--pidfile", pidfile, "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("%s: %v: %s", bin, err, out)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	for i := 0; ; i++ {
		if err = admin.Ping(context.Background()).Err(); err == nil {
			break
		}
		if i == 100 {
			os.RemoveAll(dir)
			return "", nil, fmt.Errorf("%s on %s: %v", bin, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop = func() {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		c.ShutdownNoSave(context.Background()) // the connection closes as it exits
		c.Close()
		os.RemoveAll(dir)
	}
	return addr, stop, nil
}

// serverStats is what the harness reads of a server before and after a run.
type serverStats struct {
	cpu   time.Duration // used_cpu_sys + used_cpu_user
	calls int64         // INFO commandstats calls, the harness's INFO excepted
}

// readStats sums the stats of the servers.
func readStats(ctx context.Context, admins []*redis.Client) (serverStats, error) {
	var s serverStats
	for _, admin := range admins {
		info, err := admin.Info(ctx, "cpu", "commandstats").Result()
		if err != nil {
			return s, err
		}
		s.add(info)
	}
	return s, nil
}

func (s *serverStats) add(info string) {
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
			s.cpu += seconds(v)
		} else if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
			s.cpu += seconds(v)
		} else if cmd, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls="); ok && cmd != "info" && strings.HasPrefix(line, "cmdstat_") {
			v, _, _ := strings.Cut(rest, ",")
			n, _ := strconv.ParseInt(v, 10, 64)
			s.calls += n
		}
	}
}

func seconds(v string) time.Duration {
	f, _ := strconv.ParseFloat(v, 64)
	return time.Duration(f * float64(time.Second))
}

func (s serverStats) sub(o serverStats) serverStats {
	return serverStats{s.cpu - o.cpu, s.calls - o.calls}
}
