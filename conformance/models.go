package conformance

import (
	"fmt"
	"slices"
	"strings"

	"github.com/anishathalye/porcupine"
)

// The sequential models histories are checked against (history.go). Each
// is the primitive's safety promise and nothing more: a failed or waiting
// acquisition is not recorded, as under Redlock two concurrent attempts
// may both fail on a free lock (split votes), which no sequential model
// with "fails only when held" would allow.

// capacityModel: at most n permits are held at once. A Mutex or FairMutex
// is capacityModel(1) (one holder); a Semaphore of n permits is
// capacityModel(n). The state is the number of permits held.
func capacityModel(n int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return 0 },
		Step: func(state, in, _ any) (bool, any) {
			held, op := state.(int), in.(leaseOp)
			if op.End {
				return held >= op.permits(), held - op.permits()
			}
			return held+op.permits() <= n, held + op.permits()
		},
		DescribeOperation: describeLease,
		DescribeState:     func(s any) string { return fmt.Sprintf("%d of %d held", s.(int), n) },
	}
}

// rwState is an RWMutex: its readers, or one writer.
type rwState struct {
	readers int
	writer  bool
}

// rwModel: any number of readers, or one writer alone.
func rwModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return rwState{} },
		Step: func(state, in, _ any) (bool, any) {
			s, op := state.(rwState), in.(leaseOp)
			write := op.Mode == "write"
			switch {
			case op.End && write:
				return s.writer, rwState{}
			case op.End:
				return s.readers > 0, rwState{readers: s.readers - 1}
			case write:
				return !s.writer && s.readers == 0, rwState{writer: true}
			default:
				return !s.writer, rwState{readers: s.readers + 1}
			}
		},
		DescribeOperation: describeLease,
		DescribeState: func(s any) string {
			if rw := s.(rwState); rw.writer {
				return "a writer"
			} else {
				return fmt.Sprintf("%d readers", rw.readers)
			}
		},
	}
}

// multiModel: each name has at most one holder, whether it was taken
// alone (a Mutex: Names is its one name) or with others (a MultiLock).
// The state is the set of held names, sorted and comma-separated.
func multiModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return "" },
		Step: func(state, in, _ any) (bool, any) {
			held, names := split(state.(string)), split(in.(leaseOp).Names)
			taken := slices.ContainsFunc(names, func(n string) bool { return slices.Contains(held, n) })
			if !in.(leaseOp).End {
				return !taken, join(append(held, names...))
			}
			all := !slices.ContainsFunc(names, func(n string) bool { return !slices.Contains(held, n) })
			return all, join(slices.DeleteFunc(held, func(n string) bool { return slices.Contains(names, n) }))
		},
		DescribeOperation: describeLease,
		DescribeState:     func(s any) string { return "held: {" + s.(string) + "}" },
	}
}

func split(names string) []string {
	if names == "" {
		return nil
	}
	return strings.Split(names, ",")
}

func join(names []string) string {
	slices.Sort(names)
	return strings.Join(names, ",")
}

func describeLease(in, _ any) string {
	op, _ := in.(leaseOp) // nil for an operation that never got its input
	what := "lease"
	switch {
	case op.Mode != "":
		what = op.Mode + " lease"
	case op.Names != "":
		what = "lease on {" + op.Names + "}"
	case op.Permits > 1:
		what = fmt.Sprintf("lease of %d permits", op.Permits)
	}
	switch {
	case op.Expired:
		return what + " expired (validity deadline before any release)"
	case op.End:
		return what + " released"
	}
	return "acquired " + what
}

// latchOp is the input of latchModel: a CountDown, or a Wait that
// returned because the count reached zero.
type latchOp struct{ Wait bool }

// latchModel: a latch of count; no Wait returns before count CountDowns
// took effect. The state is the count left.
func latchModel(count int) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return count },
		Step: func(state, in, _ any) (bool, any) {
			left := state.(int)
			if in.(latchOp).Wait {
				return left == 0, left
			}
			return true, max(left-1, 0)
		},
		DescribeOperation: func(in, _ any) string {
			if in.(latchOp).Wait {
				return "Wait returned"
			}
			return "CountDown"
		},
		DescribeState: func(s any) string { return fmt.Sprintf("count %d", s.(int)) },
	}
}
