module github.com/redlockgo/redlock/drivers/rueidis

go 1.26.0

require (
	github.com/redis/rueidis v1.0.79
	github.com/redlockgo/redlock v0.1.0
)

require golang.org/x/sys v0.48.0 // indirect

replace github.com/redlockgo/redlock => ../../
