module github.com/redlockgo/redlock/gen

go 1.26.0

require (
	github.com/dave/jennifer v1.7.1
	github.com/redlockgo/redlock v0.1.0
)

replace github.com/redlockgo/redlock => ../
