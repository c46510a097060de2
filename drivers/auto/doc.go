// Package auto opens the redlock driver chosen at build time, so that an
// application committed to one Redis client links only that client:
//
//	d, err := auto.Open("localhost:6379")
//	if err != nil {
//		return err
//	}
//	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
//	if err != nil {
//		return errors.Join(err, d.Close()) // no Client owns d yet: close it here
//	}
//	defer c.Close() // closes the client Open made, too
//
// The build tag picks the driver (Name says which one was built):
//
//	(no tag)          go-redis v9  (drivers/goredis), the default
//	redlock_redigo    redigo       (drivers/redigo); RESP2 only, so use core.Poll
//	redlock_rueidis   rueidis      (drivers/rueidis)
//
// for example `go build -tags redlock_rueidis ./...`. Set at most one of the
// two tags. Only the chosen client is linked: with -tags redlock_redigo,
//
//	go list -deps -tags redlock_redigo github.com/redlockgo/redlock/drivers/auto | grep -c go-redis
//
// prints 0. It is a module of its own that requires all three drivers, so
// the go.sum of an application importing it lists the three clients' modules
// (go get github.com/redlockgo/redlock/drivers/auto); one that imports a
// single driver instead lists only that client's. An application that needs more than one client, or options
// Open does not set (TLS, passwords, pool sizes, Redis Cluster), builds its
// client itself and passes it to that driver's New.
//
// Unlike the drivers' New, Open makes the client itself, so the driver it
// returns owns it: its Close (which core.Client.Close calls) closes the
// client as well. The returned driver keeps every method of the underlying
// driver, including optional interfaces such as driver.Notifier.
package auto
