package conformance

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The library's key and channel layout as the cases spell it (the scripts
// and core own it): a change of the layout is a change here alone.

// keyPrefix is the default key prefix (core.WithKeyPrefix) of every key and Client channel.
const keyPrefix = "redlock:"

// ticketInfix parts a line's stem from its tickets: <stem>:t:<member>.
const ticketInfix = ":t:"

// holdersTokenField starts the field t:<token> of a Semaphore's holders hash, which lists the token's slots.
const holdersTokenField = "t:"

// lockKey is the Mutex (and MultiLock) called name (string or owner's hash, by the acquire scripts); every key of name starts with it.
func lockKey(name string) string { return keyPrefix + "{" + name + "}" }

// fenceKey is the fencing counter of the locks called name (string, INCR by each acquisition).
func fenceKey(name string) string { return lockKey(name) + ":fence" }

// queueKey is the line of the Mutex (and MultiLock) called name (sorted set of ticket keys, by the joining waiters).
func queueKey(name string) string { return lockKey(name) + ":q" }

// fairKey is a key of the FairMutex called name (by the fair scripts): "" the lock (string, or owner's hash), ":q" the line and ":lapse" when each place lapses (sorted sets of tokens), ":t" its tickets (ticketsKey(fairKey(name, ""))).
func fairKey(name, suffix string) string { return lockKey(name) + ":fair" + suffix }

// rwKey is a key of the RWMutex called name (by the rw scripts): ":w" the write lock (string, or owner's hash), ":r" the read leases, ":wq"/":rq" the waiting writers/readers (sorted sets of tokens), ":t" its tickets, the writers' and the marks of readers' attempts (ticketsKey(rwKey(name, ""))).
func rwKey(name, suffix string) string { return lockKey(name) + ":rw" + suffix }

// semKey is a key of the Semaphore called name (by the semaphore scripts): "" its permits (sorted set of slots), ":holders" (hash), ":size", ":fence" (strings), ":q" (its line of ticket ids), ":t" (its tickets hash, see ticketsKey).
func semKey(name, suffix string) string { return lockKey(name) + ":semaphore" + suffix }

// semKeys are all of a Semaphore's keys.
func semKeys(name string) []string {
	var ks []string
	for _, s := range []string{"", ":holders", ":size", ":fence", ":q", ":t"} {
		ks = append(ks, semKey(name, s))
	}
	return ks
}

// latchKey is the Latch called name (hash {count, gen}, by the latch scripts).
func latchKey(name string) string { return lockKey(name) + ":latch" }

// ticketKey is the ticket of member (<client id>:<random>, or a token) in the line whose keys start with stem (by the joining waiter); member "" gives the prefix of them all.
func ticketKey(stem, member string) string { return stem + ticketInfix + member }

// ticketsKey is the hash of the tickets of the line whose keys start with
// stem: a Mutex's, a Semaphore's, a FairMutex's or an RWMutex's (see
// lib/tickets.lua), field ticketKey(stem, member),
// value "<deadline ms>:<value>".
func ticketsKey(stem string) string { return stem + ":t" }

// putTicket makes ticket, an id of the line whose keys start with stem,
// hold value for ttl by the server's clock, through r, as a script does
// (lib/tickets.lua): the hash lives at least as long.
func putTicket(ctx context.Context, r redis.UniversalClient, stem, ticket, value string, ttl time.Duration) error {
	now, err := r.Time(ctx).Result()
	if err != nil {
		return err
	}
	tickets := ticketsKey(stem)
	if err := r.HSet(ctx, tickets, ticket, fmt.Sprintf("%d:%s", now.Add(ttl).UnixMilli(), value)).Err(); err != nil {
		return err
	}
	ms := ttl.Milliseconds()
	if ok, err := r.Do(ctx, "pexpire", tickets, ms, "GT").Int(); err != nil || ok == 1 {
		return err
	}
	return r.Do(ctx, "pexpire", tickets, ms, "NX").Err()
}

// ticketIn returns what ticket, an id of the line whose keys start with
// stem, holds by r, and whether it holds anything that has not lapsed
// (see putTicket).
func ticketIn(ctx context.Context, r redis.UniversalClient, stem, ticket string) (string, bool, error) {
	field, err := r.HGet(ctx, ticketsKey(stem), ticket).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	now, err := r.Time(ctx).Result()
	if err != nil {
		return "", false, err
	}
	deadline, value, ok := strings.Cut(field, ":")
	ms, err := strconv.ParseInt(deadline, 10, 64)
	if !ok || err != nil || ms <= now.UnixMilli() {
		return "", false, nil
	}
	return value, true, nil
}

// ticketValues returns what the live tickets of the line whose keys start
// with stem hold on node i, by ticket id (see putTicket).
func (e env) ticketValues(t testing.TB, ctx context.Context, i int, stem string) map[string]string {
	r := e.admin(t, i)
	now, err := r.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	fields, err := r.HGetAll(ctx, ticketsKey(stem)).Result()
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]string{}
	for id, field := range fields {
		deadline, value, _ := strings.Cut(field, ":")
		if ms, err := strconv.ParseInt(deadline, 10, 64); err == nil && ms > now.UnixMilli() {
			live[id] = value
		}
	}
	return live
}

// lineStem is the stem of the tickets of the line key line (the key less its ":q", ":wq" or ":rq").
func lineStem(line string) string {
	for _, s := range []string{":q", ":wq", ":rq"} {
		if stem, ok := strings.CutSuffix(line, s); ok {
			return stem
		}
	}
	return line
}

// ticketParts splits a waiter's ticket key, <stem>:t:<client id>:<random>,
// as the scripts do (lib/tell.lua).
func ticketParts(ticket string) (stem, id string, ok bool) {
	at := strings.LastIndex(ticket, ticketInfix)
	if at < 0 {
		return "", "", false
	}
	id, _, ok = strings.Cut(ticket[at+len(ticketInfix):], ":")
	return ticket[:at], id, ok
}

// clientChannel is the Client id's own channel (PUBLISH by the scripts to tell its waiters); id "*" gives the pattern of them all.
func clientChannel(id string) string { return keyPrefix + "client:" + id }

// shardChannel is the Client id's sharded channel for the line of stem on a Cluster (SPUBLISH by the scripts).
func shardChannel(stem, id string) string { return stem + ":c:" + id }

// keyspaceChannel is where database db ("*" in an ACL pattern) publishes key's events (watched by Notify's waiters).
func keyspaceChannel(db, key string) string { return "__keyspace@" + db + "__:" + key }

// reprefixed is key, a key under keyPrefix, under prefix instead.
func reprefixed(prefix, key string) string { return prefix + strings.TrimPrefix(key, keyPrefix) }
