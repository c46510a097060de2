//go:build redlock_goredis

package main

import (
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

func init() {
	register(clientLib{"goredis", func(u string) (core.Driver, func(), error) {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return nil, func() {}, err
		}
		opt.ContextTimeoutEnabled = true
		client := redis.NewClient(opt)
		d, err := goredis.New(client)
		return d, func() { client.Close() }, err
	}})
}
