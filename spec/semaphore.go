package spec

// semaphoreOps are the operations of Semaphore and of every lease over its
// permits.
var semaphoreOps = []Op{
	{
		Name:   "SemaphoreAcquire",
		Script: "semaphore_acquire",
		Doc:    "takes n free permit slots at once, or none, first come first served among the waiters in line, purging expired ones, and draws a fencing token.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"size", String}, {"fence", String}, {"queue", String}, {"ticket", String}, {"mark", String}},
		Args:   []Param{{"token", String}, {"n", Int}, {"ttl", Millis}, {"defaultSize", Int}, {"seed", Int}, {"join", Int}, {"place", Int}, {"wait", Millis}, {"idle", Millis}, {"secret", String}},
		Reply: []Field{
			{"Status", Int, "1 when acquired, 0 when fewer than n permits are free, another waiter is first in line, or the bounded scan from the seed found too few free slots, -1 when n exceeds the number of permits (nothing written)"},
			{"Fence", Int, "the fencing counter after this acquisition; 0 when not acquired"},
			{"Retry", Millis, "when not acquired for lack of free permits, the time until enough of them expire; negative when another waiter is first; 0 when the scan found too few free slots"},
			{"Size", Int, "the number of permits in force"},
			{"Slots", Int, "a 52-bit digest of the slots given, the same on every node that gave the same ones; 0 when not acquired"},
		},
	},
	{
		Name:   "SemaphoreRelease",
		Script: "semaphore_release",
		Doc:    "gives a lease's n permits back, or takes a waiter out of line, and wakes the waiter first in line.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"queue", String}, {"ticket", String}},
		Args:   []Param{{"token", String}, {"n", Int}, {"left", Millis}, {"byID", Int}},
		Reply:  []Field{{"Released", Int, "1 when all n permits were still held (byID 2: any of the token's), 2 when a release by permit ID gave them back before, 0 otherwise"}},
	},
	{
		Name:   "SemaphoreExtend",
		Script: "semaphore_extend",
		Doc:    "lengthens the expiry of a lease's n permits while the lease holds them, as the slots it won.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"mark", String}},
		Args:   []Param{{"token", String}, {"n", Int}, {"slots", Int}, {"ttl", Millis}},
		Reply:  []Field{{"Extended", Int, "1 when the lease holds its slots here, 2 when a release by permit ID gave them back, 0 when not"}},
	},
	{
		Name:   "SemaphoreTTL",
		Script: "semaphore_ttl",
		Doc:    "reads how long a lease still holds its n permits, as the slots it won, writing nothing.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"mark", String}},
		Args:   []Param{{"token", String}, {"n", Int}, {"slots", Int}},
		Reply: []Field{
			{"TTL", Millis, "the time until the first of its permits expires; 0 when the lease does not hold them all"},
			{"ByID", Bool, "a release by permit ID gave them back"},
		},
	},
	{
		Name:   "SemaphoreSetPermits",
		Script: "semaphore_set_permits",
		Doc:    "stores the number of permits for every client and wakes the waiter first in line.",
		Keys:   []Param{{"size", String}, {"queue", String}},
		Args:   []Param{{"permits", Int}, {"idle", Millis}},
		Reply:  []Field{{"Previous", Int, "the number stored before, 0 when none was"}},
	},
	{
		Name:   "SemaphoreAvailable",
		Script: "semaphore_available",
		Doc:    "counts the free permits, purging expired ones.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"size", String}},
		Args:   []Param{{"defaultSize", Int}},
		Reply:  []Field{{"Free", Int, "the free permits, 0 when more are held than exist"}},
	},
	{
		Name:   "SemaphoreFenceRaise",
		Script: "semaphore_fence_raise",
		Doc:    "makes a quorum-chosen semaphore fencing token durable on one node.",
		Keys:   []Param{{"fence", String}},
		Args:   []Param{{"chosen", Int}, {"idle", Millis}},
		Reply:  []Field{{"Raised", Int, "always 1: the counter is now at least the token"}},
	},
	{
		Name:   "SemaphoreState",
		Script: "semaphore_state",
		Doc:    "reads a semaphore's held permits by lease, its stored number of permits and its line's length, writing nothing.",
		Keys:   []Param{{"permits", String}, {"holders", String}, {"size", String}, {"fence", String}, {"queue", String}},
		Args:   []Param{{"shown", Int}},
		Reply: []Field{
			{"Size", Int, "the number of permits stored by SetPermits; 0 when none is stored"},
			{"Fence", Int, "the fencing counter; 0 when absent"},
			{"Held", Int, "the slots whose lease has not expired"},
			{"Waiting", Int, "the tickets in the line"},
			{"Slots", Strings, "held slots, soonest to expire first: each lease's token, the slot and the milliseconds until it expires"},
		},
	},
}
