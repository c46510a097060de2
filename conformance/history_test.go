package conformance

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// until is a lease handle with a fixed validity deadline.
type until time.Time

func (u until) Until() time.Time { return time.Time(u) }

// window records a lease of client over [from, to] (milliseconds from the
// history's start): acquired at from, released at to, valid until valid.
func (h *history) window(client int, op leaseOp, from, to, valid int) {
	ms := func(n int) time.Time { return h.start.Add(time.Duration(n) * time.Millisecond) }
	h.add(client, op, nil, ms(from-1), ms(from))
	hd := &holding{h: h, client: client, op: op, l: until(ms(valid))}
	hd.end(ms(to), ms(valid), ms(to+1))
}

// recorder stands in for testing.T to see what check reports.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return "TestHistory/model" }
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestHistoryCheck(t *testing.T) {
	read, write := leaseOp{Mode: "read"}, leaseOp{Mode: "write"}
	ab, bc := leaseOp{Names: "a,b"}, leaseOp{Names: "b,c"}
	for _, tc := range []struct {
		name    string
		model   porcupine.Model
		windows [][4]int // client, from, to, valid
		ops     []leaseOp
		ok      bool
	}{
		{"mutex/one after the other", capacityModel(1), [][4]int{{0, 10, 20, 100}, {1, 30, 40, 100}}, nil, true},
		{"mutex/overlap", capacityModel(1), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, nil, false},
		// The first lease was released after its deadline: its window
		// ended at the deadline, before the second acquisition returned.
		{"mutex/expired then taken", capacityModel(1), [][4]int{{0, 10, 50, 25}, {1, 30, 40, 100}}, nil, true},
		{"mutex/taken before expiry", capacityModel(1), [][4]int{{0, 10, 50, 35}, {1, 30, 40, 100}}, nil, false},
		{"semaphore 2/two overlap", capacityModel(2), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, nil, true},
		{"semaphore 2/three overlap", capacityModel(2), [][4]int{{0, 10, 30, 100}, {1, 15, 40, 100}, {2, 20, 40, 100}}, nil, false},
		{"rwmutex/readers together", rwModel(), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, []leaseOp{read, read}, true},
		{"rwmutex/writer among readers", rwModel(), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, []leaseOp{read, write}, false},
		{"rwmutex/writer after readers", rwModel(), [][4]int{{0, 10, 30, 100}, {1, 40, 50, 100}}, []leaseOp{read, write}, true},
		{"multilock/disjoint", multiModel(), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, []leaseOp{ab, {Names: "c"}}, true},
		{"multilock/sharing a name", multiModel(), [][4]int{{0, 10, 30, 100}, {1, 20, 40, 100}}, []leaseOp{ab, bc}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			for i, w := range tc.windows {
				op := leaseOp{}
				if tc.ops != nil {
					op = tc.ops[i]
				}
				h.window(w[0], op, w[1], w[2], w[3])
			}
			expect(t, h, tc.model, tc.ok)
		})
	}
}

func TestLatchHistory(t *testing.T) {
	ms := func(h *history, n int) time.Time { return h.start.Add(time.Duration(n) * time.Millisecond) }
	for _, tc := range []struct {
		name string
		wait [2]int // the Wait's call and return
		ok   bool
	}{
		{"returned after the last CountDown", [2]int{5, 40}, true},
		{"returned with one CountDown left", [2]int{5, 25}, false},
		// The Wait overlaps the last CountDown: it may have seen zero.
		{"returned during the last CountDown", [2]int{5, 32}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHistory()
			h.add(0, latchOp{}, nil, ms(h, 10), ms(h, 12))
			h.add(1, latchOp{}, nil, ms(h, 30), ms(h, 35))
			h.add(2, latchOp{Wait: true}, nil, ms(h, tc.wait[0]), ms(h, tc.wait[1]))
			expect(t, h, latchModel(2), tc.ok)
		})
	}
}

var visualisation = regexp.MustCompile(`visualisation: (\S+\.html)$`)

// expect checks h against model and wants it found linearizable, or not
// with the path of a written visualisation in the message.
func expect(t *testing.T, h *history, model porcupine.Model, ok bool) {
	t.Helper()
	r := &recorder{TB: t}
	h.check(r, model)
	switch {
	case ok && len(r.errors) != 0:
		t.Fatalf("a valid history was rejected: %v", r.errors)
	case ok:
		return
	case len(r.errors) != 1:
		t.Fatalf("an invalid history was accepted")
	}
	m := visualisation.FindStringSubmatch(r.errors[0])
	if m == nil {
		t.Fatalf("the failure %q gives no visualisation path", r.errors[0])
	}
	b, err := os.ReadFile(m[1])
	if err != nil || !strings.Contains(strings.ToLower(string(b)), "<html") {
		t.Fatalf("visualisation %s: %v (%d bytes, not HTML)", m[1], err, len(b))
	}
	os.Remove(m[1])
}
