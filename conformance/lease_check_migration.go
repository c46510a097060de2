package conformance

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/core"
)

// testSlotMigrationLeaseCheck: a lease whose slot migrates, its key moved
// first, is still held, and Extend keeps it (a script over keys on two
// masters gets TRYAGAIN until the migration ends): Valid and TTL must say
// so too, rather than fail until it ends. The kinds of lease whose Extend
// does so: those held in one key (an owner's lease and a Semaphore's are
// extended with their attempt's mark, which stays behind).
func testSlotMigrationLeaseCheck(t *testing.T, e env) {
	const ttl = 10 * time.Second
	kinds := map[string][]string{"Mutex": {"LeaseCheck"}, "FairMutex": {"LeaseCheck"},
		"RWMutex": {"LeaseCheckWriter", "LeaseCheckReader"}, "MultiLock": {"LeaseCheck"}}
	for primitive, names := range kinds {
		for _, kind := range names {
			k := leaseCheckKinds[primitive][kind]
			t.Run(primitive+"/"+kind, func(t *testing.T) {
				ctx, n := ctxFor(t, 30*time.Second), name(t)
				cc := e.admin(t, 0).(*redis.ClusterClient)
				c := e.client(t, core.WithTTL(ttl), core.WithNodeTimeout(300*time.Millisecond))
				l := mustLock(t, ctx, k.lock(c, n))
				e.whileMigrating(t, ctx, cc, k.key(n), time.Second, func() {
					if err := l.Extend(ctx, ttl); err != nil {
						t.Errorf("Extend while its slot migrated: %v", err)
						return
					}
					if ok, err := l.Valid(ctx); !ok || err != nil {
						t.Errorf("Valid while its slot migrated, after an Extend that kept the lease: %v, %v; want true, nil", ok, err)
					}
					if left, err := l.TTL(ctx); left <= 0 || left > ttl || err != nil {
						t.Errorf("TTL while its slot migrated: %v, %v; want within (0, %v], nil", left, err, ttl)
					}
				})
				if err := l.Unlock(ctx); err != nil {
					t.Errorf("Unlock: %v", err)
				}
			})
		}
	}
}
