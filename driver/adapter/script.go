// Package adapter is for the authors of drivers, not for applications:
// what the generated adapters (drivers/*) share and the contract in package
// driver does not need to show: the embedded scripts, the decoders of
// their replies, and the helpers of the hand-written parts (a Listener
// over a Redis Cluster's nodes, the parse of INFO replication). It is
// versioned with the root module, whose version each driver module
// requires, so a driver always builds against the adapter it was
// generated for.
package adapter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redlockgo/redlock/driver"
)

// Script is one embedded script with its SHA1, for EVALSHA.
type Script struct {
	Name    string // the file under scripts/lua, without ".lua"
	SHA1    string
	Source  string
	sha1Arg any // SHA1 as an interface, made once (see SHA1Arg)
}

// SHA1Arg is SHA1 as a command word for a client that takes its words as
// []any: made once, where converting SHA1 would allocate on every call.
func (s Script) SHA1Arg() any {
	if s.sha1Arg != nil {
		return s.sha1Arg
	}
	return s.SHA1
}

// IsNoScript reports whether err is the server's NOSCRIPT error, on which a
// driver retries with EVAL. Every client formats the server's message
// as is, so this is the one place that recognises it.
func IsNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}

// replyLengthError is a decoder's error for a reply of the wrong length.
func replyLengthError(s Script, want, got int) error {
	return fmt.Errorf("%w: %s.lua returned %d values, want %d", driver.ErrUnexpectedReply, s.Name, got, want)
}

// parseNumbers parses the elements at the given places of a reply of
// strings as decimal integers; the result has v's length, 0 elsewhere.
func parseNumbers(s Script, v []string, at ...int) ([]int64, error) {
	n := make([]int64, len(v))
	for _, i := range at {
		x, err := strconv.ParseInt(v[i], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s.lua returned %q at %d, want an integer", driver.ErrUnexpectedReply, s.Name, v[i], i+1)
		}
		n[i] = x
	}
	return n, nil
}
