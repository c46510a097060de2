package goredis_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// FuzzServerReplies has a server gone wrong answer every call of every
// primitive of core, through this driver, scripts and native commands
// alike, with a reply the fuzzer shapes (integers of any value, arrays of
// any length and nesting, strings, nil, errors), and asserts that nothing
// panics or hangs and that every call ends with a lease, nil or one of
// core's errors.
// Its seeds run in every go test; the test command fuzzes it for a few
// seconds:
//
//	go test -run '^$' -fuzz FuzzServerReplies -fuzztime 30s ./drivers/goredis/
func FuzzServerReplies(f *testing.F) {
	srv := newReplyServer(f)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr(), Protocol: 2, MaxRetries: -1,
		DisableIdentity: true, ContextTimeoutEnabled: true})
	f.Cleanup(func() { rdb.Close() })
	d, err := goredis.New(rdb)
	if err != nil {
		f.Fatal(err)
	}
	for op := range uint8(fuzzReplyOps) {
		f.Add(op, []byte{0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 7})   // [1, 7, …]: a grant
		f.Add(op, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255}) // an integer
		f.Add(op, []byte{2})                                 // nil
		f.Add(op, []byte{3, 'x', 'y'})                       // an error
		f.Add(op, []byte{0, 2, 5, 255, 255, 255, 255, 255, 255, 255, 255, 4, 3})
	}
	f.Fuzz(func(t *testing.T, op uint8, shape []byte) {
		reply := encodeReply(shape, 0)
		srv.set(reply)
		hung := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("hung: op %d, reply %q", op, reply)) })
		defer hung.Stop()
		c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll), core.WithTTL(time.Second),
			core.WithNodeTimeout(100*time.Millisecond))
		if err != nil {
			checkServerError(t, "New", err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		l, err := fuzzReplyOp(ctx, c, op)
		checkServerError(t, fmt.Sprintf("op %d", op), err)
		if l != nil {
			checkServerError(t, "Extend", l.Extend(ctx, time.Second))
			_, err := l.Valid(ctx)
			checkServerError(t, "Valid", err)
			checkServerError(t, "Unlock", l.Unlock(ctx))
		}
	})
}

const fuzzReplyOps = 18

// fuzzReplyOp makes one call of a primitive; a call that returns no lease
// returns nil.
func fuzzReplyOp(ctx context.Context, c *core.Client, op uint8) (*core.Lease, error) {
	switch op % fuzzReplyOps {
	case 0:
		return c.Mutex("m").TryLock(ctx)
	case 1:
		return c.Mutex("m", core.WithOwner("o")).Lock(ctx)
	case 2:
		return c.FairMutex("f").TryLock(ctx)
	case 3:
		return c.RWMutex("rw").TryRLock(ctx)
	case 4:
		return c.RWMutex("rw").Lock(ctx)
	case 5:
		return c.Semaphore("s", 3).TryAcquire(ctx, 2)
	case 6:
		return c.MultiLock([]string{"a", "b"}).TryLock(ctx)
	case 7:
		return c.MultiLock([]string{"a", "b"}, core.WithOwner("o")).TryLock(ctx)
	case 8:
		_, err := c.Latch("l").TrySetCount(ctx, 3)
		return nil, errors.Join(err, c.Latch("l").CountDown(ctx))
	case 9:
		_, err := c.Latch("l").Count(ctx)
		return nil, errors.Join(err, c.Latch("l").Wait(ctx))
	case 10:
		_, err := c.Semaphore("s", 3).Available(ctx)
		_, errTry := c.Semaphore("s", 3).TrySetPermits(ctx, 4)
		return nil, errors.Join(err, c.Semaphore("s", 3).SetPermits(ctx, 4), errTry, c.Semaphore("s", 3).AddPermits(ctx, -1))
	case 11:
		_, err := c.Mutex("m").State(ctx)
		return nil, err
	case 12:
		_, err := c.FairMutex("f").State(ctx)
		return nil, err
	case 13:
		_, err := c.RWMutex("rw").State(ctx)
		return nil, err
	case 14:
		_, err := c.Semaphore("s", 3).State(ctx)
		return nil, err
	case 15:
		return c.Semaphore("s", 3).Acquire(ctx, 1)
	case 16:
		return c.Mutex("m").ForceLock(ctx)
	default:
		w, err := c.RWMutex("rw").TryLock(ctx)
		if err != nil {
			return nil, err
		}
		return w.Downgrade(ctx)
	}
}

// checkServerError fails t unless err is nil or one of the errors a call
// may end with when the server's replies make no sense.
func checkServerError(t *testing.T, what string, err error) {
	t.Helper()
	for _, ok := range []error{core.ErrNoQuorum, core.ErrNotAcquired, core.ErrNotHeld, core.ErrServerError,
		core.ErrInvalid, context.DeadlineExceeded} {
		if errors.Is(err, ok) {
			err = nil
		}
	}
	if err != nil {
		t.Fatalf("%s: %v, want nil or one of core's errors", what, err)
	}
}

// encodeReply turns the fuzzer's bytes into one RESP2 reply: the first
// byte picks its kind, an array's second byte its length; integers take
// eight bytes each (zero when the input runs out). depth bounds nesting.
func encodeReply(b []byte, depth int) string {
	s, _ := encodeNext(b, depth)
	return s
}

func encodeNext(b []byte, depth int) (string, []byte) {
	if len(b) == 0 {
		return ":0\r\n", b
	}
	kind, b := b[0]%5, b[1:]
	switch {
	case kind == 0 && depth < 3: // an array
		n := 0
		if len(b) > 0 {
			n, b = int(b[0]%16), b[1:]
		}
		var sb strings.Builder
		sb.WriteString("*" + strconv.Itoa(n) + "\r\n")
		for range n {
			var e string
			if len(b) > 0 && b[0] >= 0xf0 { // a nested element
				e, b = encodeNext(b[1:], depth+1)
			} else {
				var v int64
				v, b = nextInt(b)
				e = ":" + strconv.FormatInt(v, 10) + "\r\n"
			}
			sb.WriteString(e)
		}
		return sb.String(), b
	case kind == 2:
		return "$-1\r\n", b
	case kind == 3:
		return "-ERR " + strings.Map(printable, string(b)) + "\r\n", nil
	case kind == 4:
		s := strings.Map(printable, string(b))
		return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n", nil
	}
	v, b := nextInt(b)
	return ":" + strconv.FormatInt(v, 10) + "\r\n", b
}

func nextInt(b []byte) (int64, []byte) {
	var buf [8]byte
	n := copy(buf[:], b)
	return int64(binary.BigEndian.Uint64(buf[:])), b[n:]
}

func printable(r rune) rune {
	if r < ' ' || r > '~' {
		return '?'
	}
	return r
}

// replyServer is a RESP server on loopback that answers every command
// with the reply set last, but for the connection handshake.
type replyServer struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	reply string
	conns []net.Conn
}

func newReplyServer(tb testing.TB) *replyServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &replyServer{ln: ln, reply: "+OK\r\n"}
	s.wg.Go(s.serve)
	tb.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *replyServer) addr() string { return s.ln.Addr().String() }

func (s *replyServer) set(reply string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = reply
}

func (s *replyServer) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, conn)
		s.mu.Unlock()
		s.wg.Go(func() {
			defer conn.Close()
			s.answer(conn)
		})
	}
}

// answer reads commands (arrays of bulk strings) and answers each.
func (s *replyServer) answer(conn net.Conn) {
	r := bufio.NewReader(conn)
	for {
		cmd, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch strings.ToUpper(cmd) {
		case "HELLO":
			reply = "-ERR unknown command 'HELLO'\r\n"
		case "CLIENT", "SELECT", "PING":
			reply = "+OK\r\n"
		default:
			s.mu.Lock()
			reply = s.reply
			s.mu.Unlock()
		}
		if _, err := io.WriteString(conn, reply); err != nil {
			return
		}
	}
}

// readCommand reads one command and returns its name.
func readCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "*") {
		return "", fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return "", err
	}
	var name string
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return "", err
		}
		arg := make([]byte, size+2)
		if _, err := io.ReadFull(r, arg); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(arg[:size])
		}
	}
	return name, nil
}
