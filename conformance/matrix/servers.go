package matrix

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/driver/adapter"
)

// The servers' names are the suite's (testenv.Servers): Redis masters
// are "redis8" from Redis 8 on and "redis7" before it, Valkey ones
// "valkey9" whatever version they run; Server.Version says which.

// Miniredis is the embedded server: the suite starts it in each test
// binary (REDLOCK_TEST_MINIREDIS=1), so it needs nothing installed.
func Miniredis() Server {
	v := "miniredis, in process"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/alicebob/miniredis/v2" {
				v = "miniredis " + d.Version + ", in process"
			}
		}
	}
	return Server{Name: "miniredis", Version: v}
}

// Existing describes servers the user runs: each node is asked which
// server it is (INFO server); Redis nodes make up redis7 or redis8 (by
// their major version), Valkey nodes valkey9. cluster, if given, holds
// seeds of Redis and Valkey Clusters, told apart the same way; a cluster
// is a column of the server of its kind, which needs nodes too.
func Existing(ctx context.Context, nodes, cluster []string) ([]Server, error) {
	servers := []Server{{Name: "redis7"}, {Name: "redis8"}, {Name: "valkey9"}}
	of := func(kind, version string) *Server {
		name := serverName(kind, version)
		return &servers[slices.IndexFunc(servers, func(s Server) bool { return s.Name == name })]
	}
	for _, a := range nodes {
		kind, version, err := identify(ctx, a)
		if err != nil {
			return nil, err
		}
		s := of(kind, version)
		s.Nodes = append(s.Nodes, a)
		if s.Version == "" {
			s.Version = kind + " " + version
		} else if s.Version != kind+" "+version {
			return nil, fmt.Errorf("%s runs %s %s; the other %s nodes run %s", a, kind, version, s.Name, s.Version)
		}
	}
	versions := map[*Server]string{}
	for _, a := range cluster {
		kind, version, err := identify(ctx, a)
		if err != nil {
			return nil, err
		}
		s := of(kind, version)
		if len(s.Nodes) == 0 {
			return nil, fmt.Errorf("the %s %s cluster at %s needs %s nodes too (--nodes): the cluster cells are a column of the %s server", kind, version, a, s.Name, s.Name)
		}
		s.Cluster = append(s.Cluster, a)
		versions[s] = fmt.Sprintf("; cluster: %s %s", kind, version)
	}
	for s, v := range versions {
		s.Version += v
	}
	return slices.DeleteFunc(servers, func(s Server) bool { return len(s.Nodes) == 0 }), nil
}

// serverName is the suite's name of a server of kind ("Redis" or
// "Valkey") and version.
func serverName(kind, version string) string {
	major, _, _ := strings.Cut(version, ".")
	switch n, _ := strconv.Atoi(major); {
	case kind == "Valkey":
		return "valkey9"
	case n >= 8:
		return "redis8"
	}
	return "redis7"
}

// identify asks addr which server it is: ("Redis" or "Valkey", version).
func identify(ctx context.Context, addr string) (kind, version string, err error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "", "", fmt.Errorf("%s: INFO server: %w", addr, err)
	}
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	if v := fields["valkey_version"]; v != "" || fields["server_name"] == "valkey" {
		return "Valkey", v, nil
	}
	return "Redis", fields["redis_version"], nil
}

// Local starts throwaway servers from the binaries on PATH: five masters
// and a Cluster of three masters with a replica each, of Redis when
// redis-server is there, of Valkey when valkey-server is. stop kills them and removes
// their files; it is safe to call on error.
func Local(ctx context.Context) (servers []Server, stop func(), err error) {
	p, err := newProcs("")
	if err != nil {
		return nil, func() {}, err
	}
	stop, start, dir := p.stop, p.start, p.dir
	for _, bin := range []Binary{RedisServer, {Name: "valkey-server"}} {
		if _, err := exec.LookPath(bin.Name); err != nil {
			continue
		}
		var s Server
		for range 5 {
			a, err := start(bin, false)
			if err != nil {
				return nil, stop, err
			}
			s.Nodes = append(s.Nodes, a)
		}
		var replicas []string
		for i := range 6 {
			a, err := start(bin, true)
			if err != nil {
				return nil, stop, err
			}
			if i < 3 {
				s.Cluster = append(s.Cluster, a)
			} else {
				replicas = append(replicas, a)
			}
		}
		if err := awaitPing(ctx, slices.Concat(s.Nodes, s.Cluster, replicas), dir); err != nil {
			return nil, stop, err
		}
		if len(s.Cluster) > 0 {
			if err := formCluster(ctx, s.Cluster, replicas); err != nil {
				return nil, stop, err
			}
		}
		k, v, err := identify(ctx, s.Nodes[0])
		if err != nil {
			return nil, stop, err
		}
		s.Name, s.Version = serverName(k, v), k+" "+v
		if len(s.Cluster) > 0 {
			s.Version += "; cluster of 3 masters with a replica each"
		}
		servers = append(servers, s)
	}
	return servers, stop, nil
}

// A Binary is a server program to start: redis-server or valkey-server,
// on PATH, or in the chroot at Root (whose files the servers then keep
// under Root too).
type Binary struct {
	Name string
	Root string
}

// RedisServer is redis-server on PATH.
var RedisServer = Binary{Name: "redis-server"}

// command runs the server with args; paths in args are the server's.
func (b Binary) command(args ...string) *exec.Cmd {
	if b.Root == "" {
		return exec.Command(b.Name, args...)
	}
	return exec.Command("chroot", append([]string{b.Root, b.Name}, args...)...)
}

// procs are throwaway servers, their files in dir, which the servers see
// as the path under root (a chroot's directory, or "" for this host's /).
type procs struct {
	dir, root string
	mu        sync.Mutex
	cmds      map[string]*exec.Cmd // by address
}

func newProcs(root string) (*procs, error) {
	dir, err := os.MkdirTemp(filepath.Join(root, os.TempDir()), "redlock-matrix-servers-")
	if err != nil {
		return nil, err
	}
	return &procs{dir: dir, root: root, cmds: map[string]*exec.Cmd{}}, nil
}

// start starts bin, which must run under p's root, on a free port, as a
// cluster node if cluster, with extra arguments, and returns its address.
func (p *procs) start(bin Binary, cluster bool, extra ...string) (string, error) {
	port, err := freePort(cluster)
	if err != nil {
		return "", err
	}
	dir := strings.TrimPrefix(p.dir, p.root) // as the server sees it
	// A replica's first sync starts at once, not after the 5s a master
	// waits for more replicas to sync with them.
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir,
		"--repl-diskless-sync-delay", "0"}
	if cluster {
		args = append(args, "--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("nodes-%d.conf", port))
	}
	args = append(args, extra...)
	log, err := os.Create(filepath.Join(p.dir, fmt.Sprintf("%d.log", port)))
	if err != nil {
		return "", err
	}
	defer log.Close()
	cmd := bin.command(args...)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("%s: %w", bin.Name, err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cmds[addr] = cmd
	return addr, nil
}

// kill kills the server at addr at once (SIGKILL), as a crash would.
func (p *procs) kill(addr string) error {
	p.mu.Lock()
	cmd, ok := p.cmds[addr]
	delete(p.cmds, addr)
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("no server of ours at %s", addr)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return nil
}

// pause pauses the server at addr (stop) or resumes it.
func (p *procs) pause(addr string, stop bool) error {
	p.mu.Lock()
	cmd, ok := p.cmds[addr]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("no server of ours at %s", addr)
	}
	return pause(cmd, stop)
}

// stop kills every server and removes their files.
func (p *procs) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, cmd := range p.cmds {
		cmd.Process.Kill()
		cmd.Wait()
	}
	p.cmds = nil
	os.RemoveAll(p.dir)
}

// A LocalCluster is a Redis Cluster of throwaway servers (or one master and
// its replica: StartPair) that a test may break: pause a replica, kill a
// master, then promote its replica.
type LocalCluster struct {
	Masters, Replicas []string // Replicas[i] replicates Masters[i]
	bin               Binary
	extra             []string // every server's extra arguments
	p                 *procs
}

// StartCluster starts a Cluster of masters masters, each with a replica,
// from bin with the extra arguments, and waits until it is formed.
func StartCluster(ctx context.Context, bin Binary, masters int, extra ...string) (*LocalCluster, error) {
	lc, err := startLocal(ctx, bin, masters, masters, true, extra...)
	if err == nil {
		if err = formCluster(ctx, lc.Masters, lc.Replicas); err != nil {
			lc.Close()
		}
	}
	return lc, err
}

// StartServers starts n independent servers from bin, the Masters of the
// LocalCluster, and waits until each answers PING.
func StartServers(ctx context.Context, bin Binary, n int) (*LocalCluster, error) {
	return startLocal(ctx, bin, n, 0, false)
}

// startLocal starts masters and replicas, not linked yet, from bin with
// the extra arguments, and waits until each answers PING.
func startLocal(ctx context.Context, bin Binary, masters, replicas int, cluster bool, extra ...string) (*LocalCluster, error) {
	p, err := newProcs(bin.Root)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for range masters + replicas {
		a, err := p.start(bin, cluster, extra...)
		if err != nil {
			p.stop()
			return nil, err
		}
		addrs = append(addrs, a)
	}
	if err := awaitPing(ctx, addrs, p.dir); err != nil {
		p.stop()
		return nil, err
	}
	return &LocalCluster{Masters: slices.Clip(addrs[:masters]), Replicas: addrs[masters:], bin: bin, extra: extra, p: p}, nil
}

// StartPair starts one master and its replica (REPLICAOF), not a
// cluster, from bin, and waits until the replica's link is up.
func StartPair(ctx context.Context, bin Binary) (*LocalCluster, error) {
	lc, err := startLocal(ctx, bin, 1, 1, false)
	if err != nil {
		return nil, err
	}
	r := redis.NewClient(&redis.Options{Addr: lc.Replicas[0], Protocol: 2, DisableIdentity: true})
	defer r.Close()
	host, port, _ := strings.Cut(lc.Masters[0], ":")
	err = r.Do(ctx, "REPLICAOF", host, port).Err()
	for deadline := time.Now().Add(20 * time.Second); err == nil; time.Sleep(50 * time.Millisecond) {
		info, ierr := r.Info(ctx, "replication").Result()
		if ierr == nil && strings.Contains(info, "master_link_status:up") {
			return lc, nil
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("the replica %s did not link to %s within 20s (%v)", lc.Replicas[0], lc.Masters[0], ierr)
		}
	}
	lc.Close()
	return nil, err
}

// AddMaster starts one more cluster node, has the cluster meet it, and
// waits until every node knows it: a master without slots, until the
// caller gives it some.
func (lc *LocalCluster) AddMaster(ctx context.Context) (string, error) {
	a, err := lc.p.start(lc.bin, true, lc.extra...)
	if err != nil {
		return "", err
	}
	if err := awaitPing(ctx, []string{a}, lc.p.dir); err != nil {
		return "", err
	}
	old := slices.Concat(lc.Masters, lc.Replicas)
	c := redis.NewClient(&redis.Options{Addr: old[0], Protocol: 2, DisableIdentity: true})
	defer c.Close()
	host, port, _ := net.SplitHostPort(a)
	if err := c.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		return "", fmt.Errorf("%s: CLUSTER MEET %s: %w", old[0], a, err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		known := true
		for _, o := range append(old, a) {
			oc := redis.NewClient(&redis.Options{Addr: o, Protocol: 2, DisableIdentity: true})
			nodes, err := oc.ClusterNodes(ctx).Result()
			info, _ := oc.ClusterInfo(ctx).Result()
			oc.Close()
			// (a new master says CLUSTERDOWN for its first 2s)
			known = known && err == nil && strings.Count(nodes, "\n") >= len(old)+1 && !strings.Contains(nodes, "handshake") &&
				strings.Contains(nodes, " "+a+"@") && strings.Contains(info, "cluster_state:ok")
		}
		if known {
			lc.Masters = append(lc.Masters, a)
			return a, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the cluster did not learn of its new node %s within 20s", a)
		}
	}
}

// AddReplica starts one more cluster node, has it replicate master, and
// waits until its link is up, master lists it in CLUSTER SLOTS, and it
// and every other node are connected by the cluster bus (so the others
// hear at once what it announces). It is not added to Replicas, which
// pairs each master with its first replica.
func (lc *LocalCluster) AddReplica(ctx context.Context, master string) (string, error) {
	a, err := lc.p.start(lc.bin, true, lc.extra...)
	if err != nil {
		return "", err
	}
	if err := awaitPing(ctx, []string{a}, lc.p.dir); err != nil {
		return "", err
	}
	m := redis.NewClient(&redis.Options{Addr: master, Protocol: 2, DisableIdentity: true})
	defer m.Close()
	r := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
	defer r.Close()
	host, port, _ := net.SplitHostPort(a)
	if err := m.Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
		return "", fmt.Errorf("%s: CLUSTER MEET %s: %w", master, a, err)
	}
	if err := replicate(ctx, r, m); err != nil {
		return "", fmt.Errorf("%s: CLUSTER REPLICATE %s: %w", a, master, err)
	}
	old := slices.Concat(lc.Masters, lc.Replicas)
	connected := func() bool {
		for _, o := range append(old, a) {
			oc := redis.NewClient(&redis.Options{Addr: o, Protocol: 2, DisableIdentity: true})
			nodes, err := oc.ClusterNodes(ctx).Result()
			oc.Close()
			if err != nil || strings.Count(nodes, " connected") < len(old)+1 || strings.Contains(nodes, "handshake") {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		info, _ := r.Info(ctx, "replication").Result()
		//lint:ignore SA1019 what the cluster clients list nodes by
		slots, _ := m.ClusterSlots(ctx).Result()
		listed := slices.ContainsFunc(slots, func(s redis.ClusterSlot) bool {
			return slices.ContainsFunc(s.Nodes, func(n redis.ClusterNode) bool { return n.Addr == a })
		})
		if listed && strings.Contains(info, "master_link_status:up") && connected() {
			return a, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("the new replica %s of %s was not linked, listed and connected to every node within 20s", a, master)
		}
	}
}

// Pause stops the server at addr (SIGSTOP): its connections stay open and
// it answers nothing until Resume.
func (lc *LocalCluster) Pause(addr string) error { return lc.p.pause(addr, true) }

// Resume resumes the server at addr after Pause.
func (lc *LocalCluster) Resume(addr string) error { return lc.p.pause(addr, false) }

// Kill kills the server at addr, as a crash would.
func (lc *LocalCluster) Kill(addr string) error { return lc.p.kill(addr) }

// Close kills every server of the cluster and removes their files.
func (lc *LocalCluster) Close() { lc.p.stop() }

// freePort returns a port nothing listens on; for a cluster node, one
// whose cluster bus port (port+10000) is free as well.
func freePort(cluster bool) (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !cluster {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if bus, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+10000)); err == nil {
			bus.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free port pair for a cluster node")
}

// awaitPing waits until every node answers PING, up to 10s.
func awaitPing(ctx context.Context, addrs []string, logs string) error {
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		var err error
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if err = c.Ping(ctx).Err(); err == nil || ctx.Err() != nil {
				break
			}
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("the server at %s did not answer PING within 10s (logs in %s): %w", a, logs, err)
		}
	}
	return nil
}

// formCluster makes one cluster of the masters, an even share of the
// 16384 slots each, and the replicas, replicas[i] of masters[i]: MEET,
// REPLICATE, then wait until every node reports cluster_state:ok and
// every replica its link to its master up.
func formCluster(ctx context.Context, masters, replicas []string) error {
	const slots = 16384
	addrs := slices.Concat(masters, replicas)
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
		defer clients[i].Close()
	}
	for i, c := range clients[:len(masters)] {
		from, to := i*slots/len(masters), (i+1)*slots/len(masters)-1
		if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", from, to).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER ADDSLOTSRANGE: %w", addrs[i], err)
		}
	}
	for _, a := range addrs[1:] {
		host, port, _ := net.SplitHostPort(a)
		if err := clients[0].Do(ctx, "CLUSTER", "MEET", host, port).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER MEET %s: %w", addrs[0], a, err)
		}
	}
	for i, r := range clients[len(masters):] {
		if err := replicate(ctx, r, clients[i]); err != nil {
			return fmt.Errorf("%s: CLUSTER REPLICATE %s: %w", replicas[i], masters[i], err)
		}
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		ok := true
		for i, c := range clients {
			info, _ := c.ClusterInfo(ctx).Result()
			ok = ok && strings.Contains(info, "cluster_state:ok")
			if i >= len(masters) {
				info, _ = c.Info(ctx, "replication").Result()
				ok = ok && strings.Contains(info, "master_link_status:up")
			}
			// Every node has heard which nodes replicate which, as a
			// client that counts the replicas by CLUSTER NODES expects.
			nodes, err := c.ClusterNodes(ctx).Result()
			counted, perr := adapter.ParseClusterNodes(nodes)
			ok = ok && err == nil && perr == nil && len(counted.Slots) == len(masters) &&
				!slices.ContainsFunc(counted.Slots, func(s driver.SlotReplicas) bool { return s.Replicas < min(len(replicas), 1) })
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the cluster %v did not reach cluster_state:ok, with its replicas linked and known to every node, within 20s", addrs)
		}
	}
}

// replicate makes replica a replica of master, once it has heard of it.
func replicate(ctx context.Context, replica, master *redis.Client) error {
	id, err := master.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		err = replica.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
	}
}
