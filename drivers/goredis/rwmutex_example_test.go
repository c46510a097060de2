package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/core"
)

// Readers share the lock (core.RWMutex); a writer has it alone.
func Example_rwMutex() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	rw := c.RWMutex("catalog")
	r1, err := rw.RLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	r2, err := rw.TryRLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = rw.TryLock(ctx)
	fmt.Println("write beside two readers:", errors.Is(err, core.ErrNotAcquired))

	r1.Unlock(ctx)
	r2.Unlock(ctx)
	w, err := rw.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = rw.TryRLock(ctx)
	fmt.Println("read beside a writer:", errors.Is(err, core.ErrNotAcquired))
	fmt.Println("write token above the reads':", w.Token() > r2.Token())
	w.Unlock(ctx)
	// Output:
	// write beside two readers: true
	// read beside a writer: true
	// write token above the reads': true
}

// A writer turns its write lease into a read lease (Lease.Downgrade): no
// other writer gets in between, and other readers may join it.
func Example_rwMutexDowngrade() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	rw := c.RWMutex("catalog")
	w, err := rw.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// ... write the catalog, then go on reading what was written.
	r, err := w.Downgrade(ctx)
	if err != nil {
		log.Fatal(err) // the write lease ended too
	}
	defer r.Unlock(ctx)
	_, err = rw.TryLock(ctx)
	fmt.Println("write beside the downgraded lease:", errors.Is(err, core.ErrNotAcquired))
	other, err := rw.TryRLock(ctx)
	fmt.Println("another reader joins:", err == nil)
	other.Unlock(ctx)
	fmt.Println("same token:", r.Token() == w.Token())
	// Output:
	// write beside the downgraded lease: true
	// another reader joins: true
	// same token: true
}
