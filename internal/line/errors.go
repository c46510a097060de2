package line

import (
	"errors"

	"github.com/redlockgo/redlock/internal/quorum"
)

// The wait strategy's refusals, which the public package documents.
var (
	ErrNotifyUnsupported = errors.New("redlock: the Notify wait strategy is not supported here")
	ErrConfigRefused     = errors.New("redlock: cannot configure keyspace notifications")
)

// ErrClosed is the group's: the Client closed.
var ErrClosed = quorum.ErrClosed
