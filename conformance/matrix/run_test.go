package matrix

import (
	"slices"
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

func TestLongestFirst(t *testing.T) {
	goredis := &pkg{importPath: "drivers/goredis", cluster: true}
	redigo := &pkg{importPath: "drivers/redigo"}
	rueidis := &pkg{importPath: "drivers/rueidis", cluster: true}
	var runs []*testRun
	var jobs []*job
	for _, p := range []*pkg{goredis, redigo, rueidis} {
		tops := 1
		if p == goredis {
			tops = 2 // RESP3 and RESP2
		}
		for _, s := range []string{"redis7", "valkey9"} {
			jobs = append(jobs, &job{pkg: p.importPath, server: s, tops: tops})
			runs = append(runs, &testRun{pkg: p, server: Server{Name: s}, job: len(jobs) - 1})
		}
	}
	var got []string
	for _, r := range longestFirst(runs, jobs) {
		got = append(got, r.pkg.importPath+"/"+r.server.Name)
	}
	want := []string{"drivers/goredis/redis7", "drivers/goredis/valkey9", "drivers/rueidis/redis7", "drivers/rueidis/valkey9", "drivers/redigo/redis7", "drivers/redigo/valkey9"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	for i, r := range runs {
		if r.job != i {
			t.Fatalf("longestFirst reordered its argument: runs[%d] is job %d's", i, r.job)
		}
	}
}
