package core

// Limits of what the scripts hold exactly and serve in bounded time. The
// scripts compute in Lua numbers, doubles, which hold integers exactly up
// to 2^53; and one script call blocks its server, so the work of one call
// is bounded (a call also clears only a bounded number of a line's
// lapsed entries).
const (
	// MaxLatchCount is the largest count TrySetCount accepts.
	MaxLatchCount = 1 << 53

	// MaxSemaphorePermits is the largest number of permits a Semaphore
	// may have (Client.Semaphore, SetPermits, TrySetPermits, AddPermits).
	MaxSemaphorePermits = 1 << 53

	// MaxSemaphoreAcquire is the most permits one acquisition may take:
	// a node gives each permit in the script that takes them.
	MaxSemaphoreAcquire = 100

	// MaxSemaphoreReleaseAll is the most permit IDs one
	// Semaphore.ReleaseAll may give back: a node gives them back in one
	// script.
	MaxSemaphoreReleaseAll = 100

	// MaxMultiLockNames is the most names one MultiLock may hold: a node
	// takes and releases them all in one script.
	MaxMultiLockNames = 50
)
