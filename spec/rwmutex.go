package spec

// rwMutexOps are the operations of RWMutex. A write lease extends with
// Extend (the write lock is a string holding the token) and makes its
// fencing token durable with FenceRaise; a read lease extends with
// RWMutexReadExtend; a write lease that RWMutexDowngrade turned into a read
// lease keeps its token.
var rwMutexOps = []Op{
	{
		Name:   "RWMutexReadAcquire",
		Script: "rw_rlock",
		Doc:    "grants a read lease while no writer holds or waits; a reader that must wait registers to be woken.",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"tickets", String}, {"fence", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}, {"wait", Millis}, {"idle", Millis}, {"owner", String}},
		Reply: []Field{
			{"Acquired", Bool, "the read lease is granted with the token (at once when the owner holds the write lock)"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the writer's remaining time; -1 without expiry, -2 when a writer waits"},
		},
	},
	{
		Name:   "RWMutexWriteAcquire",
		Script: "rw_lock",
		Doc:    "grants the write lease when no one holds the lock; a writer that must wait announces itself, which keeps new readers out.",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"tickets", String}, {"fence", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}, {"wait", Millis}, {"secret", String}, {"idle", Millis}, {"owner", String}},
		Reply: []Field{
			{"Acquired", Bool, "the write lease is granted with the token (or taken again by the owner that holds it)"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the time until the writer's or the first reader's lease lapses; -1 without expiry"},
		},
	},
	{
		Name:   "RWMutexReadExtend",
		Script: "rw_rextend",
		Doc:    "resets a read lease's expiry while it is live.",
		Keys:   []Param{{"readers", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}},
		Reply:  []Field{{"Extended", Int, "1 when extended, 0 when the lease lapsed or was released"}},
	},
	{
		Name:   "RWMutexReadTTL",
		Script: "rw_read_ttl",
		Doc:    "reads how long a read lease still holds, writing nothing.",
		Keys:   []Param{{"readers", String}},
		Args:   []Param{{"token", String}},
		Reply:  []Field{{"TTL", Millis, "the time until the lease lapses; 0 when it lapsed or was released"}},
	},
	{
		Name:   "RWMutexRelease",
		Script: "rw_release",
		Doc:    "gives up a read or write lease, or a wait, and hands on to who may go next.",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"tickets", String}, {"fence", String}},
		Args:   []Param{{"token", String}, {"keep", Int}, {"idle", Millis}, {"left", Millis}},
		Reply:  []Field{{"Released", Int, "1 when the token held the write lock or a live read lease here, 0 otherwise"}},
	},
	{
		Name:   "RWMutexDowngrade",
		Script: "rw_downgrade",
		Doc:    "turns a write lease into a read lease of the same token at once, waking waiting readers when no writer waits; writes nothing unless the token holds the write lock.",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"tickets", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}},
		Reply:  []Field{{"Downgraded", Int, "1 when the token held the write lock here and now holds a read lease, 0 otherwise"}},
	},
	{
		Name:   "RWMutexForce",
		Script: "rw_force",
		Doc:    "frees a reader/writer lock, its writer and every read lease, and hands on to who may go next (an operator's force-release).",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"tickets", String}, {"fence", String}, {"forced", String}},
		Args:   []Param{{"idle", Millis}, {"left", Millis}},
		Reply:  []Field{{"Freed", Int, "1 when a writer or a live read lease held the lock and it is freed, 0 when it was free"}},
	},
	{
		Name:   "RWMutexState",
		Script: "rw_state",
		Doc:    "reads a reader/writer lock's writer, read leases and waiters, writing nothing.",
		Keys:   []Param{{"writer", String}, {"readers", String}, {"writers", String}, {"waiting", String}, {"fence", String}},
		Args:   []Param{{"shown", Int}},
		Reply: []Field{
			{"Writer", String, "the token that holds the write lock, or the owner of a reentrant one; empty when none"},
			{"TTL", Millis, "the write lock's remaining time; negative when it is absent or has no expiry"},
			{"Fence", Int, "the fencing counter, the token of the latest grant; 0 when absent"},
			{"Readers", Int, "the read leases that have not lapsed"},
			{"Writers", Int, "the waiting writers that have not lapsed, the writers left out"},
			{"Waiting", Int, "the waiting readers that have not lapsed"},
			{"Owned", Bool, "Writer is an owner"},
			{"Holds", Int, "the write leases that hold the write lock: the owner's, 1 for a token, 0 when none"},
			{"Listed", Strings, "read leases (r) and waiting writers (w): each kind, token and milliseconds until it lapses"},
		},
	},
}
