package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// Code that used redsync, moved to a core.Mutex: each comment names the
// redsync call that the line below replaces (docs/migrating.md).
func Example_fromRedsync() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	// redsync: pool := goredis.NewPool(rdb)
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	// redsync: rs := redsync.New(pool), with one pool per master: here one
	// driver per master.
	c, err := core.New([]core.Driver{d})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// redsync: mutex := rs.NewMutex("my-global-mutex",
	//	redsync.WithExpiry(8*time.Second), redsync.WithTries(32))
	mutex := c.Mutex("my-global-mutex", core.WithTTL(8*time.Second), core.WithMaxAttempts(32))
	// redsync: err := mutex.LockContext(ctx)
	lease, err := mutex.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// redsync: ok, err := mutex.ExtendContext(ctx)
	if err := lease.Extend(ctx, 8*time.Second); err != nil {
		log.Fatal(err)
	}
	// redsync: mutex.Until(); mutex.Value() is a random string, where
	// lease.Token() is a fencing token, larger for every new holder.
	fmt.Println("valid:", time.Until(lease.Until()) > 0, "token > 0:", lease.Token() > 0)
	// redsync: ok, err := mutex.UnlockContext(ctx)
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// valid: true token > 0: true
}

// Code that used bsm/redislock, moved to a core.Mutex: each comment names
// the redislock call that the line below replaces (docs/migrating.md).
func Example_fromRedislock() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	// redislock: locker := redislock.New(rdb)
	c, err := core.New([]core.Driver{d})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// redislock: lock, err := locker.Obtain(ctx, "my-key", 10*time.Second, nil)
	lease, err := c.Mutex("my-key", core.WithTTL(10*time.Second)).TryLock(ctx)
	if errors.Is(err, core.ErrNotAcquired) { // redislock.ErrNotObtained
		fmt.Println("Could not obtain lock!")
		return
	} else if err != nil {
		log.Fatal(err)
	}
	// redislock: ttl, err := lock.TTL(ctx), a round trip; the lease knows
	// its end, and lease.Done() closes when it is lost.
	fmt.Println("held:", time.Until(lease.Until()) > 0)
	// redislock: err := lock.Refresh(ctx, 10*time.Second, nil)
	if err := lease.Extend(ctx, 10*time.Second); err != nil {
		log.Fatal(err)
	}
	// redislock: err := lock.Release(ctx); ErrLockNotHeld is core.ErrNotHeld
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// held: true
}
