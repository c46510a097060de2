package main

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/scripts/lua"
	"github.com/redlockgo/redlock/scripts/lua/keycheck"
)

func runSlowlog(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("slowlog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	servers := fs.String("servers", "", "the servers to read, `host:port,...` (masters and replicas; each is read on its own)")
	top := fs.Int("top", 5, "how many scripts to list, the longest-blocking first")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: redlock slowlog --servers host:port,... [flags]

Reads the SLOWLOG of each server and says which redlock scripts blocked it
longest: Redis runs one script at a time, so every other client of the
server waited behind such a call. Calls of scripts that are not redlock's
are listed by SHA1. The figures are what the server logged (calls at least
as long as its slowlog-log-slower-than), wall time on the server: on a
machine short of CPU they include time the server waited to run.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	addrs := split(*servers)
	if fs.NArg() > 0 || len(addrs) == 0 || *top < 1 {
		fmt.Fprintf(stderr, "redlock slowlog: want --servers host:port,... and --top ≥ 1, and no arguments (got %q)\n", fs.Args())
		fs.Usage()
		return 2
	}
	var calls []scriptCall
	failed := 0
	for _, addr := range addrs {
		got, err := readSlowlog(ctx, addr)
		if err != nil {
			fmt.Fprintf(stderr, "redlock slowlog: %s: %v\n", addr, err)
			failed++
			continue
		}
		calls = append(calls, got...)
	}
	if failed == len(addrs) {
		return 1
	}
	printSlowScripts(stdout, summarize(calls, knownScripts()), *top)
	return 0
}

// scriptCall is one script call that a server logged.
type scriptCall struct {
	server string
	took   time.Duration
	args   []string // as logged: each at most 128 bytes, then "... (N more bytes)"
}

func readSlowlog(ctx context.Context, addr string) ([]scriptCall, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := redis.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	entries, err := redis.Values(redis.DoContext(conn, ctx, "SLOWLOG", "GET", -1))
	if err != nil {
		return nil, err
	}
	var calls []scriptCall
	for _, e := range entries {
		// id, timestamp, microseconds, arguments[, client address, name]
		fields, err := redis.Values(e, nil)
		if err != nil || len(fields) < 4 {
			return nil, fmt.Errorf("SLOWLOG GET: an entry that is not [id, time, µs, args, ...]: %v", e)
		}
		us, err1 := redis.Int64(fields[2], nil)
		args, err2 := redis.Strings(fields[3], nil)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("SLOWLOG GET: %w", err)
		}
		if len(args) > 1 && isScriptCall(args[0]) {
			calls = append(calls, scriptCall{server: addr, took: time.Duration(us) * time.Microsecond, args: args})
		}
	}
	return calls, nil
}

func isScriptCall(cmd string) bool {
	cmd = strings.ToUpper(cmd)
	return strings.HasPrefix(cmd, "EVAL") || strings.HasPrefix(cmd, "FCALL")
}

// script is one of redlock's scripts as a server sees it.
type script struct {
	name, sha1, source string
}

// knownScripts lists redlock's scripts, and each behind the key check
// that the conformance suite puts before it (package keycheck), so that
// the test command's report names the suite's calls too.
func knownScripts() []script {
	var ss []script
	for _, f := range lua.Names() {
		name := strings.TrimSuffix(f, ".lua")
		src := lua.Source(f)
		checked := sha1.Sum([]byte(keycheck.Wrap(name, src)))
		sum := sha1.Sum([]byte(src))
		// A wrapped script's EVAL shows only the check's first bytes:
		// it is known by its SHA1 alone.
		ss = append(ss, script{name, hex.EncodeToString(sum[:]), src},
			script{name + " (key-checked)", hex.EncodeToString(checked[:]), ""})
	}
	return ss
}

// scriptName names the script of a call: by its SHA1 for EVALSHA, by the
// start of its body for EVAL (the log keeps 128 bytes of an argument).
func scriptName(args []string, known []script) string {
	arg := args[1]
	if strings.HasPrefix(strings.ToUpper(args[0]), "FCALL") {
		return "function " + arg
	}
	if body, cut := strings.CutSuffix(arg, " more bytes)"); cut {
		arg = body[:strings.LastIndex(body, "... (")]
	}
	for _, s := range known {
		if strings.EqualFold(arg, s.sha1) || strings.HasPrefix(s.source, arg) && len(arg) > 40 {
			return s.name
		}
	}
	if len(arg) > 40 && strings.HasPrefix(keycheck.Prelude(keycheck.Code, ""), arg[:40]) {
		return "eval of a key-checked script"
	}
	if len(arg) == 40 {
		return "sha " + arg[:12] + " (not redlock's)"
	}
	return "eval " + strings.Join(strings.Fields(arg[:min(len(arg), 24)]), " ") + "… (not redlock's)"
}

// slowScript is what the logs hold of one script.
type slowScript struct {
	name    string
	calls   int
	longest scriptCall
}

// summarize groups calls by script, the longest-blocking first.
func summarize(calls []scriptCall, known []script) []slowScript {
	by := map[string]*slowScript{}
	for _, c := range calls {
		n := scriptName(c.args, known)
		s := by[n]
		if s == nil {
			s = &slowScript{name: n}
			by[n] = s
		}
		s.calls++
		if c.took > s.longest.took {
			s.longest = c
		}
	}
	var out []slowScript
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b slowScript) int {
		return cmp.Or(cmp.Compare(b.longest.took, a.longest.took), cmp.Compare(a.name, b.name))
	})
	return out
}

func printSlowScripts(w io.Writer, ss []slowScript, top int) {
	total := 0
	for _, s := range ss {
		total += s.calls
	}
	if total == 0 {
		fmt.Fprintln(w, "no script call logged")
		return
	}
	fmt.Fprintf(w, "%d script calls logged, by %d scripts; the %d that blocked longest:\n", total, len(ss), min(top, len(ss)))
	fmt.Fprintf(w, "  %-24s %6s %9s  %s\n", "script", "calls", "longest", "on")
	for _, s := range ss[:min(top, len(ss))] {
		fmt.Fprintf(w, "  %-24s %6d %7dµs  %s\n", s.name, s.calls, s.longest.took.Microseconds(), s.longest.server)
	}
}

// split returns the non-empty, trimmed items of a comma-separated list.
func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
