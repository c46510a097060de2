module github.com/redlockgo/redlock/drivers/redigo

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.3
	github.com/redlockgo/redlock v0.1.0
)

replace github.com/redlockgo/redlock => ../../
