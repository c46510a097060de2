package redigo

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

var _ driver.Replicated = (*Driver)(nil)

// Replicas returns how many replicas are connected to the server, by INFO
// replication.
func (d *Driver) Replicas(ctx context.Context) (driver.Replicas, error) {
	info, err := redis.String(d.send(ctx, "INFO", "replication"))
	if err != nil {
		return driver.Replicas{}, err
	}
	return adapter.ParseReplication(info)
}

// WaitReplicas writes marker and sends WAIT on one connection of the pool.
func (d *Driver) WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error) {
	conn, err := d.pool.GetContext(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if err := conn.Send("SET", marker, "", "PX", 1); err != nil {
		return 0, err
	}
	// Do flushes SET with WAIT, and returns WAIT's reply with the first
	// error reply of the two.
	return redis.Int(redis.DoContext(conn, ctx, "WAIT", n, max(timeout.Milliseconds(), 1)))
}
