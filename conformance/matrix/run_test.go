package matrix

import (
	"testing"
	"time"
)

func TestQueueOneMiniredisAtATime(t *testing.T) {
	mini := func() *testRun { return &testRun{server: Miniredis()} }
	a, b, c := mini(), mini(), &testRun{server: Server{Name: "redis7"}}
	q := newQueue([]*testRun{a, b, c})
	if got := q.take(); got != a {
		t.Fatal("the first run was not handed out first")
	}
	if got := q.take(); got != c {
		t.Fatal("a second miniredis run was handed out while one runs")
	}
	got := make(chan *testRun)
	go func() { got <- q.take() }()
	select {
	case <-got:
		t.Fatal("the second miniredis run started before the first was done")
	case <-time.After(50 * time.Millisecond):
	}
	q.done(a)
	if r := <-got; r != b {
		t.Fatal("the second miniredis run was not handed out once the first was done")
	}
	q.done(b)
	q.done(c)
	if r := q.take(); r != nil {
		t.Fatal("an empty queue handed out a run")
	}
}
