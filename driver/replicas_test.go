package driver

import "testing"

// The examples of the Redis Cluster specification, with the slots that
// CLUSTER KEYSLOT gives them.
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":            12739, // CRC-16/XMODEM's check value, 0x31c3
		"{user1000}.following": 3443,  // the hash tag's: user1000
		"foo{}{bar}":           8363,  // an empty tag: the whole key
		"foo{{bar}}zap":        4015,  // {bar
		"foo{bar}{zap}":        5061,  // the first tag: bar
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}
