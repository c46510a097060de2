package driver

import "context"

// Notifier is the optional interface of a driver that can deliver Redis
// keyspace notifications, which the Notify wait strategy needs. Package
// core finds it by type assertion, in one place, and requires Protocol()
// to be 3.
type Notifier interface {
	// DB returns the database the driver's connections select. Keyspace
	// notifications are published per database, on the channel
	// __keyspace@<db>__:<key>, so a wrong DB means no notifications (waiters
	// then fall back to retrying at the holder's TTL). A driver that cannot
	// read it from its client's options asks the server.
	DB(ctx context.Context) (int, error)

	// Listen opens one dedicated subscription connection. deliver is called
	// with the channel and the payload (for a keyspace channel, the event:
	// "del", "expired", ...) of every message received, from one goroutine
	// at a time, never after Close returned; it must not block. The
	// Listener resubscribes by itself when its connection drops and is
	// re-established, so Listen fails only when it cannot start at all.
	Listen(ctx context.Context, deliver func(channel, payload string)) (Listener, error)

	// EachServer calls f with every server behind the driver: the one
	// server, or every master and replica a cluster client knows (keyspace
	// events are published by the server that holds the key, and a replica
	// holds its master's keys once promoted). It calls f for every server
	// even when some fail, and returns their errors joined.
	EachServer(ctx context.Context, f func(context.Context, Server) error) error
}

// Server is one server behind a driver, as EachServer gives it.
type Server interface {
	// Addr is the server's address, for messages.
	Addr() string
	// ConfigGet returns a parameter of this server (CONFIG GET), "" when
	// the server does not know it.
	ConfigGet(ctx context.Context, param string) (string, error)
	// ConfigSet sets a parameter of this server (CONFIG SET).
	ConfigSet(ctx context.Context, param, value string) error
}

// Listener is one subscription connection.
type Listener interface {
	// Subscribe adds channels and returns once the server confirmed them,
	// so that a message published after it returns is delivered.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe drops channels. It may return before the server confirmed.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Close closes the connection and waits for the goroutines the
	// Listener started; deliver is not called after it returns.
	Close() error
}

// ShardListener is a Listener that can also hold sharded subscriptions
// (SSUBSCRIBE: Redis 7 and Valkey). On a Redis Cluster a sharded message
// stays in the shard that owns its channel's slot, where a classic one goes
// to every node. Its messages come through the same deliver.
type ShardListener interface {
	Listener
	// SSubscribe subscribes one sharded channel and returns once the
	// server confirmed it, or with its error (MOVED, an unknown command).
	// A cluster's Listener keeps it subscribed where its slot is served,
	// also after the slot moved, until SUnsubscribe.
	SSubscribe(ctx context.Context, channel string) error
	// SUnsubscribe drops a sharded channel.
	SUnsubscribe(ctx context.Context, channel string) error
}

// ShardNodeListener is the Listener of one server that ListenEach can give
// sharded channels: it reports those the server dropped.
type ShardNodeListener interface {
	ShardListener
	// OnShardLost sets lost, called with a sharded channel that the
	// server dropped (its slot moved: the server pushes SUNSUBSCRIBE) or
	// whose connection broke, where the client tells; from the Listener's
	// goroutine, once each time, and it must not block. It is set before
	// the first SSubscribe. The channels of a server that left the cluster
	// are placed again when ListenEach lists the nodes again, at a
	// subscription.
	OnShardLost(lost func(channel string))
}

// RefreshListener is a Listener of a cluster client that can follow the
// cluster's nodes: Refresh lists them again, listens to those that joined
// (with the channels the others have) and closes those that left. The
// Notify strategy calls it every second while waiters wait.
type RefreshListener interface {
	Listener
	Refresh(ctx context.Context) error
}

// ResubscribingListener is a Listener that tells when it subscribed its
// channels again on a new connection, after the one before broke or the
// server closed it (CLIENT KILL, an output buffer over its limit): what
// was published meanwhile is lost, and the Notify strategy has its
// waiters attempt again.
type ResubscribingListener interface {
	Listener
	// OnResubscribed sets f, called each time the server confirmed the
	// channels subscribed again on a new connection; from the Listener's
	// goroutine, and it must not block. It is set before the first
	// Subscribe.
	OnResubscribed(f func())
}
