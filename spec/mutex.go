package spec

// mutexOps are the operations of Mutex and of every lease over its keys.
var mutexOps = []Op{
	{
		Name:   "MutexAcquire",
		Script: "mutex_acquire",
		Doc:    "takes a plain lock with the waiter's token and draws a fencing token.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"ticket", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}, {"join", Int}, {"arrival", Int}},
		Reply: []Field{
			{"Acquired", Bool, "the lock was free (or granted to the token) and is now held with the token"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the holder's remaining time; negative without expiry"},
			{"First", Bool, "when not acquired, the waiter joined the queue at its head"},
		},
	},
	{
		Name:   "MutexAcquireOwned",
		Script: "mutex_acquire_owned",
		Doc:    "takes or re-enters a reentrant lock for an owner and draws a fencing token.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"ticket", String}},
		Args:   []Param{{"owner", String}, {"ttl", Millis}, {"join", Int}, {"arrival", Int}},
		Reply: []Field{
			{"Acquired", Bool, "the owner now holds the lock (first hold or re-entry)"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the holder's remaining time; negative without expiry"},
			{"First", Bool, "when not acquired, the waiter joined the queue at its head"},
		},
	},
	{
		Name:   "Release",
		Script: "release",
		Doc:    "deletes a plain lock only when it holds token (compare-and-delete).",
		Keys:   []Param{{"lock", String}},
		Args:   []Param{{"token", String}},
		Reply:  []Field{{"Deleted", Int, "1 when deleted, 0 when absent or held by another token"}},
		Natives: []Native{
			{Name: "Delifeq", Server: "Valkey 9", Command: []string{"DELIFEQ", "$lock", "$token"}, Reply: IntReply},
			{Name: "Delex", Server: "Redis 8.4", Command: []string{"DELEX", "$lock", "IFEQ", "$token"}, Reply: IntReply},
		},
	},
	{
		Name:   "ReleaseWake",
		Script: "release_wake",
		Doc:    "deletes a plain lock only when it holds token, handing it on to the oldest waiter.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}},
		Args:   []Param{{"token", String}, {"reserve", Millis}},
		Reply:  []Field{{"Deleted", Int, "1 when deleted, 0 when absent or held by another token"}},
	},
	{
		Name:   "MutexLeave",
		Script: "mutex_leave",
		Doc:    "takes a waiter that gives up out of the queue, passing on a grant or reservation made to it.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}, {"ticket", String}},
		Args:   []Param{{"token", String}, {"reserve", Millis}},
		Reply:  []Field{{"Passed", Int, "1 when the lock passed on, 0 otherwise"}},
	},
	{
		Name:   "Extend",
		Script: "extend",
		Doc:    "resets a plain lock's expiry only when it holds token (compare-and-set).",
		Keys:   []Param{{"lock", String}},
		Args:   []Param{{"token", String}, {"ttl", Millis}},
		Reply:  []Field{{"Extended", Int, "1 when extended, 0 when absent or held by another token"}},
		Natives: []Native{
			{Name: "SetIfeq", Server: "Redis 8.4, Valkey 8.1", Command: []string{"SET", "$lock", "$token", "IFEQ", "$token", "PX", "$ttl"}, Reply: OKReply},
		},
	},
	{
		Name:   "ReleaseOwned",
		Script: "release_owned",
		Doc:    "drops one of the owner's holds on a reentrant lock; the last hands it on to the next waiter.",
		Keys:   []Param{{"lock", String}, {"fence", String}, {"queue", String}},
		Args:   []Param{{"owner", String}, {"reserve", Millis}},
		Reply:  []Field{{"HoldsLeft", Int, "the owner's remaining holds, 0 when freed, -1 when it held nothing"}},
	},
	{
		Name:   "ExtendOwned",
		Script: "extend_owned",
		Doc:    "resets a reentrant lock's expiry only while owner holds it.",
		Keys:   []Param{{"lock", String}},
		Args:   []Param{{"owner", String}, {"ttl", Millis}},
		Reply:  []Field{{"Extended", Int, "1 when extended, 0 when the owner holds nothing"}},
	},
	{
		Name:   "FenceRaise",
		Script: "fence_raise",
		Doc:    "makes a quorum-chosen fencing token durable while holder still holds the lock.",
		Keys:   []Param{{"lock", String}, {"fence", String}},
		Args:   []Param{{"holder", String}, {"chosen", Int}},
		Reply:  []Field{{"Held", Int, "1 when still held here and the counter is at least the token"}},
	},
}
