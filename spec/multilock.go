package spec

// multiLockOps take and release all names of a MultiLock in one script,
// where one server holds every name; elsewhere a MultiLock runs mutexOps
// once per name.
var multiLockOps = []Op{
	{
		Name:   "MultiLockAcquire",
		Script: "multi_acquire",
		Doc:    "takes every name of a MultiLock with the waiter's token, or none and queues the waiter at the first name held by another.",
		Keys:   []Param{{"keys", Strings}},
		Args:   []Param{{"token", String}, {"ttl", Millis}, {"join", Int}, {"arrival", Int}, {"reserve", Millis}, {"secret", String}, {"idle", Millis}, {"stem", String}, {"spend", Int}, {"tickets", String}},
		Reply: []Field{
			{"Acquired", Bool, "every name is now held with the token"},
			{"Fence", Int, "every name's fencing counter after this acquisition; 0 when not acquired"},
			{"HolderTTL", Millis, "when not acquired, the remaining time of the name's holder; negative without expiry"},
			{"At", Int, "when not acquired, the index of the first name held by another token"},
		},
	},
	{
		Name:   "MultiLockRelease",
		Script: "multi_release",
		Doc:    "releases every name of a MultiLock that holds token, granting them all to a waiter for the same names, or each to its oldest waiter, and marks the attempt's tickets as mark says.",
		Keys:   []Param{{"keys", Strings}},
		Args:   []Param{{"token", String}, {"reserve", Millis}, {"idle", Millis}, {"left", Millis}, {"mark", Int}, {"tickets", String}},
		Reply:  []Field{{"Released", Int, "how many names held the token and were released"}},
	},
}
