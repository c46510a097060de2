//go:build redlock_rueidis

package main

import (
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/core"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

func init() {
	register(clientLib{"rueidis", func(u string) (core.Driver, func(), error) {
		opt, err := rueidis.ParseURL(u)
		if err != nil {
			return nil, func() {}, err
		}
		// The lock calls gain nothing from rueidis' client-side cache, and
		// miniredis has no CLIENT TRACKING, which it needs.
		opt.DisableCache = true
		client, err := rueidis.NewClient(opt)
		if err != nil {
			return nil, func() {}, err
		}
		d, err := rueidisdriver.New(client)
		return d, client.Close, err
	}})
}
