package driver

import "context"

// Notifier is the optional interface of a driver that can deliver Redis
// keyspace notifications, which the Notify wait strategy needs. Package
// core finds it by type assertion, in one place, and requires Protocol()
// to be 3.
type Notifier interface {
	// Listen opens one dedicated subscription connection. deliver is called
	// with the channel name of every message received, from one goroutine
	// at a time, until the Listener is closed. The Listener resubscribes by
	// itself when its connection drops and is re-established.
	Listen(ctx context.Context, deliver func(channel string)) (Listener, error)

	// ConfigGet returns a server parameter (CONFIG GET). On a cluster it
	// reads one master.
	ConfigGet(ctx context.Context, param string) (string, error)

	// ConfigSet sets a server parameter (CONFIG SET). On a cluster it sets
	// it on every master.
	ConfigSet(ctx context.Context, param, value string) error
}

// Listener is one subscription connection.
type Listener interface {
	// Subscribe adds channels and returns once the server confirmed them.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe drops channels.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Close closes the connection; deliver is not called after it returns.
	Close() error
}
