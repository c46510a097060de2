package redigo_test

import "github.com/redlockgo/redlock/internal/testserver"

// addr is the Redis server the examples use.
var addr = testserver.Addr()
