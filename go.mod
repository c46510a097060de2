module github.com/redlockgo/redlock

go 1.26.0
