package spec

// latchOps are the operations of Latch.
var latchOps = []Op{
	{
		Name:   "LatchTrySet",
		Script: "latch_try_set",
		Doc:    "sets a latch's count and generation, only when no count is set and this setting was not undone, and did not open, already.",
		Keys:   []Param{{"latch", String}, {"undone", String}, {"opened", String}},
		Args:   []Param{{"count", Int}, {"gen", Int}, {"expiry", Millis}},
		Reply:  []Field{{"Set", Bool, "the count was set"}},
	},
	{
		Name:   "LatchCountDown",
		Script: "latch_count_down",
		Doc:    "counts a latch down by one, once per call; reaching zero deletes it, which wakes the waiters, and marks its setting opened.",
		Keys:   []Param{{"latch", String}, {"opened", String}, {"call", String}},
		Args:   []Param{{"expiry", Millis}},
		Reply:  []Field{{"Left", Int, "the count left, also to a copy of the call; 0 when the latch opened or had no count"}},
	},
	{
		Name:   "LatchRead",
		Script: "latch_read",
		Doc:    "reads a latch's count, generation and remaining time.",
		Keys:   []Param{{"latch", String}},
		Reply: []Field{
			{"Count", Int, "the count, 0 when no count is set"},
			{"Gen", Int, "the generation of the setting, 0 when no count is set"},
			{"TTL", Millis, "the time until the latch expires; negative when no count is set"},
		},
	},
	{
		Name:   "LatchUnset",
		Script: "latch_unset",
		Doc:    "undoes a setting of a latch that did not reach a majority, or, where it has not landed yet, marks it undone.",
		Keys:   []Param{{"latch", String}, {"undone", String}},
		Args:   []Param{{"gen", Int}, {"expiry", Millis}},
		Reply:  []Field{{"Deleted", Bool, "the latch held that setting and was deleted"}},
	},
	{
		Name:   "LatchDelete",
		Script: "latch_delete",
		Doc:    "deletes a latch, whatever its count; the deletion wakes the waiters, as the latch is open, and marks its setting opened.",
		Keys:   []Param{{"latch", String}, {"opened", String}},
		Args:   []Param{{"expiry", Millis}},
		Reply:  []Field{{"Deleted", Bool, "a count was set and is deleted"}},
	},
}
