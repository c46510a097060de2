package conformance

import (
	"crypto/rand"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/scripts/lua"
)

// TestHMACWithoutBitLibrary: miniredis's Lua has no bit library, so
// lib/hmac.lua computes XOR by arithmetic there; its MACs must be Go's
// HMAC-SHA1 all the same (the hand-off cases check Redis's and Valkey's,
// which use the bit library): RFC 2202's vectors, and keys and messages
// of the shapes the scripts use.
func TestHMACWithoutBitLibrary(t *testing.T) {
	srv := miniredis.RunT(t)
	r := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer r.Close()
	script := lua.Source("lib/hmac.lua") + "\nreturn hmac(ARGV[1], ARGV[2])"
	check := func(key, message string) {
		t.Helper()
		got, err := r.Eval(t.Context(), script, nil, key, message).Text()
		if want := hmacHex(key, message); err != nil || got != want {
			t.Fatalf("hmac(%q, %q) = %q (%v), want %q", key, message, got, err, want)
		}
	}
	check("Jefe", "what do ya want for nothing?")
	check(string(make([]byte, 20)), "Hi There")
	check("", "")
	for range 20 {
		key := rand.Text()
		check(key, "1839694422110209 "+ticketKey(lockKey("name"), rand.Text()+":"+key))
		check(key+key, "0 "+ticketKey(lockKey("a/b"), "x:y")) // 52 bytes, near the block
	}
}
