package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlockgo/redlock/core"
)

// A job handed from one worker to another keeps its lock: the first
// stores the lease's ID with the job, the next resumes the lease by it and
// extends or releases it. Resume returns ErrNotHeld once the lease no
// longer holds the name.
func Example_mutexResume() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	m := c.Mutex("export:7", core.WithTTL(10*time.Second))

	lease, err := m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	id := lease.ID() // stored with the job

	// In the next worker, with a Client of its own:
	resumed, err := m.Resume(ctx, id)
	if err != nil {
		log.Fatal(err) // ErrNotHeld: the lock expired or another holds it
	}
	fmt.Println("same token:", resumed.Token() == lease.Token())
	if err := resumed.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	_, err = m.Resume(ctx, id)
	fmt.Println("after Unlock:", errors.Is(err, core.ErrNotHeld))

	// Output:
	// same token: true
	// after Unlock: true
}

// ExtendOrRetake extends a lease, or takes the name again when the lease
// was lost and nobody took the name meanwhile: a retake is a new lease,
// with a higher token, which the caller must use from then on.
func Example_leaseExtendOrRetake() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lease, err := c.Mutex("reindex", core.WithTTL(100*time.Millisecond)).TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	<-lease.Done() // a pause past the TTL: the lease is lost

	next, err := lease.ExtendOrRetake(ctx, 10*time.Second)
	if err != nil {
		log.Fatal(err) // ErrLost: another holds the name now
	}
	defer next.Unlock(ctx)
	if next != lease {
		// Another holder may have come and gone: check the work so far,
		// and send next.Token() with every write from now on.
		fmt.Println("retaken, higher token:", next.Token() > lease.Token())
	}

	// Output:
	// retaken, higher token: true
}
