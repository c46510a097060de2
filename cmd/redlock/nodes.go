package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	redigoredis "github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/redigo"
)

// nodesEnv names the variable that gives the nodes when --nodes does not.
const nodesEnv = "REDLOCK_NODES"

// opener connects one new client to the node at url (redis:// or
// rediss://) and returns a driver over it and the function that closes
// the client.
type opener func(url string) (core.Driver, func(), error)

// clientLib is a client library the command can use.
type clientLib struct {
	name string
	open opener
}

// drivers are the client libraries built in, in the order the demo prints
// them: redigo always (it compiles in seconds), go-redis with the build
// tag redlock_goredis and rueidis with redlock_rueidis (see
// drivers_goredis.go and drivers_rueidis.go). Each of those two takes
// longer to compile than the rest of the command.
var drivers = []clientLib{{"redigo", openRedigo}}

// register adds a client library that a build tag compiled in; the
// first of goredis, rueidis and redigo built in is the default.
//
//lint:ignore U1000 called by drivers_goredis.go and drivers_rueidis.go, under their build tags
func register(lib clientLib) {
	drivers = append(drivers, lib)
	slices.SortStableFunc(drivers, func(a, b clientLib) int { return cmp.Compare(rank(a.name), rank(b.name)) })
}

func rank(name string) int { return slices.Index([]string{"goredis", "rueidis", "redigo"}, name) }

func driverNames() []string {
	var out []string
	for _, d := range drivers {
		out = append(out, d.name)
	}
	return out
}

func openRedigo(u string) (core.Driver, func(), error) {
	pool := &redigoredis.Pool{DialContext: func(ctx context.Context) (redigoredis.Conn, error) {
		return redigoredis.DialURLContext(ctx, u)
	}}
	d, err := redigo.New(pool)
	return d, func() { pool.Close() }, err
}

// connFlags are the flags that say which servers to use and how.
type connFlags struct {
	nodes, driver, strategy, prefix string
}

// register adds the connection flags to fs, but for those named in except.
func (f *connFlags) register(fs *flag.FlagSet, except ...string) {
	all := flag.NewFlagSet("", flag.ContinueOnError)
	all.StringVar(&f.nodes, "nodes", "", "the nodes, comma-separated `URLs`: redis://[user:password@]host:port[/db], rediss:// for TLS, host:port alone for redis://host:port; one for a single node, 3 or 5 independent masters for Redlock (default $"+nodesEnv+")")
	all.StringVar(&f.driver, "driver", drivers[0].name, "the client library: "+strings.Join(driverNames(), ", ")+" (built in; go-redis with -tags redlock_goredis, rueidis with -tags redlock_rueidis)")
	all.StringVar(&f.strategy, "strategy", "auto", "how a blocked acquisition waits: notify (keyspace notifications and hand-off messages; RESP3, so not with redigo), poll (retries with backoff), or auto (poll with redigo, notify otherwise)")
	all.StringVar(&f.prefix, "prefix", "redlock:", "the key prefix (the application's WithKeyPrefix)")
	all.VisitAll(func(fl *flag.Flag) {
		if !slices.Contains(except, fl.Name) {
			fs.Var(fl.Value, fl.Name, fl.Usage)
		}
	})
}

// resolve returns the nodes' URLs, at least one, and the chosen driver's
// opener.
func (f *connFlags) resolve() ([]string, opener, error) {
	urls, err := f.urls()
	if err != nil {
		return nil, nil, err
	}
	if len(urls) == 0 {
		return nil, nil, fmt.Errorf("no nodes: give --nodes redis://host:port,... or set $%s", nodesEnv)
	}
	open, err := f.open()
	return urls, open, err
}

// urls returns the nodes' URLs, from --nodes or $REDLOCK_NODES.
func (f *connFlags) urls() ([]string, error) {
	list := f.nodes
	if list == "" {
		list = os.Getenv(nodesEnv)
	}
	var out []string
	for _, n := range split(list) {
		if !strings.Contains(n, "://") {
			n = "redis://" + n
		}
		u, err := url.Parse(n)
		if err != nil {
			return nil, fmt.Errorf("node %q: %w", n, err)
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" || u.Host == "" {
			return nil, fmt.Errorf("node %q: want redis://host:port or rediss://host:port (TLS), with user:password@ and /db if needed", n)
		}
		out = append(out, n)
	}
	return out, nil
}

// open returns the chosen driver's opener.
func (f *connFlags) open() (opener, error) {
	for _, d := range drivers {
		if d.name == f.driver {
			return d.open, nil
		}
	}
	if rank(f.driver) >= 0 {
		return nil, fmt.Errorf("--driver %s is not built in: build the command with -tags redlock_%s (go build -tags redlock_%s ./cmd/redlock)", f.driver, f.driver, f.driver)
	}
	return nil, fmt.Errorf("--driver %q: want one of %s", f.driver, strings.Join(driverNames(), ", "))
}

// waitStrategy returns the strategy to use with the chosen driver.
func (f *connFlags) waitStrategy() (core.WaitStrategy, error) {
	switch f.strategy {
	case "notify":
		return core.Notify, nil
	case "poll":
		return core.Poll, nil
	case "auto":
		if f.driver == "redigo" {
			return core.Poll, nil
		}
		return core.Notify, nil
	}
	return 0, fmt.Errorf("--strategy %q: want notify, poll or auto", f.strategy)
}

// connect opens one driver per URL and a Client over them, and returns
// the Client and the function that closes it and then the clients.
func connect(open opener, urls []string, opts ...core.Option) (*core.Client, func(), error) {
	var (
		ds     []core.Driver
		closes []func()
	)
	closeAll := func() {
		for _, c := range closes {
			c()
		}
	}
	for _, u := range urls {
		d, closeConn, err := open(u)
		closes = append(closes, closeConn)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", redact(u), err)
		}
		ds = append(ds, d)
	}
	c, err := core.New(ds, opts...)
	if errors.Is(err, core.ErrNotifyUnsupported) {
		err = fmt.Errorf("%w\n(here: give --strategy poll, or a client library that speaks RESP3: --driver goredis or rueidis, built in with -tags redlock_goredis or redlock_rueidis)", err)
	}
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return c, func() { c.Close(); closeAll() }, nil
}

// redact hides the password of a node's URL.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return u
}
