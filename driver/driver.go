// Package driver is the contract between the portable primitives in package
// core and the adapters for Redis clients in drivers/. As in
// database/sql/driver, abilities that only some clients or servers have are
// optional interfaces, found by type assertion in one place in package
// core. Unlike it, the required interface is not small: Driver has a method
// per server operation (Scripts, about thirty) and four more. An operation
// with seven keys and arguments or more takes them in a struct,
// <Op>Request, named field by field. They are generated from package spec, into the adapters
// too (with the scripts and the decoders of their replies, in an internal
// package); an adapter writes by hand only what cannot be generated:
// construction, its protocol, the server probes, listening and Close.
package driver

//go:generate go run github.com/redlockgo/redlock/gen

import (
	"errors"
	"io"
	"strings"
	"syscall"
)

// ErrInvalid is returned, wrapped with a message that says what was wrong,
// for input that cannot be used: a nil client, an empty name, a bad TTL.
// Nothing is written to a server when it is returned.
var ErrInvalid = errors.New("redlock: invalid argument")

// ErrUnexpectedReply is returned when a server's reply does not have the
// shape its script declares; it means the script and its spec disagree.
var ErrUnexpectedReply = errors.New("redlock: unexpected reply")

// Driver is one node, or one Redis Cluster, seen through one client library.
type Driver interface {
	Scripts

	// Name names the client library ("goredis", "redigo", "rueidis"); it
	// appears in error messages.
	Name() string

	// Protocol is the RESP version the driver's connections speak: 2 or 3.
	Protocol() int

	// IsServerError reports whether err is an error reply from the server
	// (unknown command, syntax error, WRONGTYPE, NOPERM), as opposed to a
	// network or client failure. Capability probes rely on it.
	IsServerError(err error) bool

	// Close releases what the driver opened itself. It does not close the
	// client the application passed in.
	Close() error
}

// IsTransient reports whether err is an error reply that says the server
// did not run the command and may if it is sent again soon: a Redis
// Cluster slot in migration (TRYAGAIN, or a MOVED or ASK that the client
// did not follow), a cluster or master down for a failover (CLUSTERDOWN,
// MASTERDOWN), a replica that was a master until a failover, or a master
// without the replicas it requires (READONLY, NOREPLICAS), a server
// loading its data (LOADING) or running a slow script (BUSY).
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	code, _, _ := strings.Cut(err.Error(), " ")
	switch code {
	case "TRYAGAIN", "MOVED", "ASK", "CLUSTERDOWN", "MASTERDOWN", "READONLY", "NOREPLICAS", "LOADING", "BUSY":
		return true
	}
	return false
}

// IsTryAgain reports a Redis Cluster node's TRYAGAIN: the call's keys
// are on two masters, as while their slot migrates key by key, and no
// master runs it until the migration ends.
func IsTryAgain(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN")
}

// IsBrokenConnection reports whether err says that the connection to the
// server could not be opened (refused) or broke (reset, closed): on a
// Redis Cluster, what a master that died gives until its replica takes
// over and the client learns of it.
func IsBrokenConnection(err error) bool {
	for _, e := range []error{syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE, io.EOF, io.ErrUnexpectedEOF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// IsWrongType reports whether err is the server's WRONGTYPE error.
func IsWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// SingleServer is the optional interface of a driver that knows whether
// its client talks to one server (a master, with its replicas): then one
// script may touch keys of any hash slot. Package core takes and releases
// a MultiLock's names in one script (MultiLockAcquire, MultiLockRelease)
// only where SingleServer reports true; on a Redis Cluster, behind a
// client that shards keys across servers, or with a driver that does not
// implement it, it runs one script per name.
type SingleServer interface {
	SingleServer() bool
}
