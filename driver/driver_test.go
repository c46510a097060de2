package driver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
)

func TestIsTransient(t *testing.T) {
	for msg, want := range map[string]bool{
		"TRYAGAIN Multiple keys request during rehashing of slot":  true,
		"MOVED 3999 127.0.0.1:6381":                                true,
		"ASK 3999 127.0.0.1:6381":                                  true,
		"CLUSTERDOWN The cluster is down":                          true,
		"MASTERDOWN Link with MASTER is down":                      true,
		"LOADING Redis is loading the dataset in memory":           true,
		"BUSY Redis is busy running a script":                      true,
		"READONLY You can't write against a read only replica.":    true,
		"NOREPLICAS Not enough good replicas to write.":            true,
		"BUSYKEY Target key name already exists.":                  false,
		"WRONGTYPE Operation against a key holding the wrong kind": false,
		"NOSCRIPT No matching script":                              false,
		"dial tcp 127.0.0.1:1: connect: connection refused":        false,
		"context deadline exceeded":                                false,
	} {
		if got := IsTransient(errors.New(msg)); got != want {
			t.Errorf("IsTransient(%q) = %v, want %v", msg, got, want)
		}
	}
	if IsTransient(nil) {
		t.Error("IsTransient(nil) = true")
	}
	if IsTransient(fmt.Errorf("node 0: %w", errors.New("TRYAGAIN x"))) {
		t.Error("a wrapped reply is not the server's: IsTransient reads the reply as the client returns it")
	}
}

func TestIsBrokenConnection(t *testing.T) {
	dial := func(addr string) error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	for err, want := range map[error]bool{
		dial(addr): true,
		io.EOF:     true,
		fmt.Errorf("read: %w", syscall.ECONNRESET): true,
		errors.New("TRYAGAIN x"):                   false,
		context.DeadlineExceeded:                   false,
		os.ErrDeadlineExceeded:                     false,
	} {
		if got := IsBrokenConnection(err); got != want {
			t.Errorf("IsBrokenConnection(%v) = %v, want %v", err, got, want)
		}
	}
}
