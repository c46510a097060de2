package rueidis_test

import (
	"cmp"
	"os"
	"strings"
)

// addr is the Redis server the examples use: the first of
// REDLOCK_TEST_NODES (scripts/test.sh starts real servers), else localhost.
var addr = cmp.Or(strings.Split(os.Getenv("REDLOCK_TEST_NODES"), ",")[0], "localhost:6379")
