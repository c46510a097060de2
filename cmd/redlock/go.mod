module github.com/redlockgo/redlock/cmd/redlock

go 1.26.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.9.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/redlockgo/redlock v0.1.0
	github.com/redlockgo/redlock/drivers/goredis v0.1.0
	github.com/redlockgo/redlock/drivers/redigo v0.1.0
	github.com/redlockgo/redlock/drivers/rueidis v0.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace (
	github.com/redlockgo/redlock => ../../
	github.com/redlockgo/redlock/drivers/goredis => ../../drivers/goredis
	github.com/redlockgo/redlock/drivers/redigo => ../../drivers/redigo
	github.com/redlockgo/redlock/drivers/rueidis => ../../drivers/rueidis
)
