package conformance

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// testSemaphoreKeptPlaceMalformed: on one server, which gives the places
// in line, a waiter out of line (passed over) whose ticket holds no place
// it can keep (the previous version's "<n>:<secret>", or "<n>"; or one
// too large for a score, that another program wrote) joins again behind
// a waiter that joined before this join, with the place the server gives
// it now; its attempt does not fail, and its ticket holds a place in
// digits afterwards, that one.
func testSemaphoreKeptPlaceMalformed(t *testing.T, e env) {
	for _, c := range []struct{ name, value string }{
		{"OldFormat", "1:oldsecret"},
		{"NoSecretNoPlace", "1"},
		// A place beyond a double: kept as +inf, it must not be written
		// back as "inf", which no ticket's reader takes for a place.
		{"HugePlace", "1:secret:" + strings.Repeat("9", 400)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, n := ctxFor(t, 20*time.Second), name(t)
			stem := semKey(n, "")
			d := e.drivers(t, e.addrs)[0]
			r := e.admin(t, 0)
			attempt := func(token, ticket string) driver.SemaphoreAcquireReply {
				t.Helper()
				rep, err := d.SemaphoreAcquire(ctx, driver.SemaphoreAcquireRequest{
					Permits: stem, Holders: semKey(n, ":holders"), Size: semKey(n, ":size"), Fence: semKey(n, ":fence"),
					Queue: semKey(n, ":q"), Tickets: ticketsKey(stem), Mark: ticketKey(stem, "a:"+token),
					Token: token, N: 1, TTL: time.Minute, DefaultSize: 1, Seed: 0, Join: 1, Place: 0,
					Wait: time.Minute, Idle: time.Minute, Secret: "s" + token, Ticket: ticket,
				})
				if err != nil {
					t.Fatalf("attempt of %s: %v", ticket, err)
				}
				return rep
			}
			if rep := attempt("holder", ticketKey(stem, "c:holder")); rep.Status != 1 {
				t.Fatalf("the holder's attempt: %+v, want the permit", rep)
			}
			first, second := ticketKey(stem, "c:first"), ticketKey(stem, "c:second")
			if err := putTicket(ctx, r, stem, first, c.value, time.Minute); err != nil {
				t.Fatal(err)
			}
			if rep := attempt("second1", second); rep.Status != 0 {
				t.Fatalf("the second waiter's attempt: %+v, want it in line", rep)
			}
			time.Sleep(2 * time.Millisecond)
			if rep := attempt("first1", first); rep.Status != 0 {
				t.Fatalf("the attempt of the waiter whose ticket held %q: %+v, want it in line", c.value, rep)
			}
			line, err := r.ZRangeWithScores(ctx, semKey(n, ":q"), 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(line) != 2 || line[0].Member != second || line[1].Member != first {
				t.Fatalf("the line after the join of a waiter whose ticket held %q: %v, want %s then %s", c.value, line, second, first)
			}
			value, ok, err := ticketIn(ctx, r, stem, first)
			if err != nil || !ok {
				t.Fatalf("the joined waiter's ticket: %q, %v, %v", value, ok, err)
			}
			if !regexp.MustCompile(`^1:sfirst1:[0-9]+$`).MatchString(value) {
				t.Fatalf("the joined waiter's ticket holds %q, no place in digits: the scripts read it as no waiter's ticket, and drop the waiter from the line as dead", value)
			}
			if want := "1:sfirst1:" + strconv.FormatFloat(line[1].Score, 'f', 0, 64); !math.IsInf(line[1].Score, 0) && value != want {
				t.Fatalf("the joined waiter's ticket holds %q, want %q: the place it was given", value, want)
			}
		})
	}
}
