// Package testserver names the Redis server that the drivers' examples
// and tests use: the first of REDLOCK_TEST_NODES (scripts/test.sh
// starts real servers and sets it), else one on localhost.
package testserver

import (
	"os"
	"strings"
)

// Addr is the server's address.
func Addr() string {
	first, _, _ := strings.Cut(os.Getenv("REDLOCK_TEST_NODES"), ",")
	if first == "" {
		return "localhost:6379"
	}
	return first
}
