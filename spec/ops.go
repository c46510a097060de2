package spec

import "slices"

// Ops is every operation, in the order the generated code lists them: one
// list per primitive, each in its own file.
var Ops = slices.Concat(
	mutexOps, multiLockOps,
	fairMutexOps, rwMutexOps,
	semaphoreOps, latchOps,
)
