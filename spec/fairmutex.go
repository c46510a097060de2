package spec

// fairMutexOps are the operations of FairMutex. Its leases extend with
// Extend (the lock is a string holding the token, like a plain Mutex's),
// or for an owner with ExtendOwned (the owner's hash, like a reentrant
// Mutex's),
// and make their fencing token durable with FenceRaise.
var fairMutexOps = []Op{
	{
		Name:   "FairMutexAcquire",
		Script: "fair_acquire",
		Doc:    "queues a waiter for a first-come-first-served lock and grants it the lock when it is first in line.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"lapse", String}, {"tickets", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}, {"place", Int}, {"wait", Millis}, {"secret", String}, {"idle", Millis}, {"owner", String}},
		Reply: []Field{
			{"Acquired", Bool, "the waiter was first in line and the lock free (or granted to the token, or held by the owner), and it is now held with the token"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the holder's remaining time; -1 without expiry, -2 when free but another waiter is first"},
		},
	},
	{
		Name:   "FairMutexRelease",
		Script: "fair_release",
		Doc:    "releases a fair lock for its holder, or takes a waiter out of the line, and grants the lock to the waiter now first.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"lapse", String}, {"tickets", String}},
		Args:   []Param{{"token", String}, {"keep", Int}, {"idle", Millis}, {"left", Millis}},
		Reply:  []Field{{"Released", Int, "1 when the token held the lock and it was deleted, 0 otherwise"}},
	},
	{
		Name:   "FairMutexForce",
		Script: "fair_force",
		Doc:    "frees a fair lock whoever holds it and grants it to the waiter first in line (an operator's force-release).",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"lapse", String}, {"tickets", String}, {"forced", String}},
		Args:   []Param{{"idle", Millis}, {"left", Millis}},
		Reply:  []Field{{"Freed", Int, "1 when the lock was held and is freed, 0 when it was free"}},
	},
	{
		Name:   "FairMutexState",
		Script: "fair_state",
		Doc:    "reads a fair lock's holder, its remaining time, the fencing counter and the waiters in line, writing nothing.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"lapse", String}},
		Args:   []Param{{"shown", Int}},
		Reply: []Field{
			{"Holder", String, "the token that holds the lock, or the owner of a reentrant lock; empty when free"},
			{"TTL", Millis, "the lock's remaining time; negative when it is absent or has no expiry"},
			{"Fence", Int, "the fencing counter, the token of the latest grant; 0 when absent"},
			{"Waiting", Int, "the waiters whose place has not lapsed, the holders left out"},
			{"Owned", Bool, "Holder is an owner"},
			{"Holds", Int, "the leases that hold the lock: the owner's, 1 for a token, 0 when free"},
			{"Line", Strings, "the first waiters in line order, each token followed by the milliseconds until its place lapses"},
		},
	},
}
