package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/scripts/lua/keycheck"
)

// logged is an argument as SLOWLOG keeps it: 128 bytes, then a count of
// the rest.
func logged(arg string) string {
	if len(arg) <= 128 {
		return arg
	}
	return fmt.Sprintf("%s... (%d more bytes)", arg[:128], len(arg)-128)
}

func TestSlowlogNamesScripts(t *testing.T) {
	known := knownScripts()
	if len(known) == 0 {
		t.Fatal("no scripts embedded")
	}
	for _, s := range known {
		calls := [][]string{{"evalsha", s.sha1, "1", "k"}, {"EVALSHA", strings.ToUpper(s.sha1), "0"}}
		if s.source != "" {
			calls = append(calls, []string{"eval", logged(s.source), "1", "k"})
		}
		for _, args := range calls {
			if got := scriptName(args, known); got != s.name {
				t.Errorf("%s %.20q…: named %q, want %q", args[0], args[1], got, s.name)
			}
		}
	}
	for args, want := range map[[2]string]string{
		{"evalsha", strings.Repeat("ab", 20)}:                       "sha abababababab (not redlock's)",
		{"eval", logged("return 1 -- " + strings.Repeat("x", 300))}: "eval return 1 -- xxxxxxxxxxxx… (not redlock's)",
		{"fcall", "myfunc"}:                                         "function myfunc",
		{"eval", logged(keycheck.Wrap("release", "return 1"))}:      "eval of a key-checked script",
	} {
		if got := scriptName(args[:], known); got != want {
			t.Errorf("%q: named %q, want %q", args, got, want)
		}
	}
}

func TestSlowlogSummary(t *testing.T) {
	known := knownScripts()
	call := func(server, name string, ms int) scriptCall {
		for _, s := range known {
			if s.name == name {
				return scriptCall{server, time.Duration(ms) * time.Millisecond, []string{"evalsha", s.sha1, "0"}}
			}
		}
		t.Fatalf("no script %s", name)
		return scriptCall{}
	}
	ss := summarize([]scriptCall{
		call("a:1", "release", 2), call("b:2", "mutex_acquire", 7), call("a:1", "release", 3), call("b:2", "release", 1),
	}, known)
	if len(ss) != 2 || ss[0].name != "mutex_acquire" || ss[1].name != "release" || ss[1].calls != 3 ||
		ss[1].longest.took != 3*time.Millisecond || ss[1].longest.server != "a:1" {
		t.Fatalf("summary %+v: want mutex_acquire (7ms) first, then release with 3 calls, longest 3ms on a:1", ss)
	}
	var out bytes.Buffer
	printSlowScripts(&out, ss, 1)
	if want := "4 script calls logged, by 2 scripts; the 1 that blocked longest:"; !strings.Contains(out.String(), want) ||
		!strings.Contains(out.String(), "mutex_acquire") || strings.Contains(out.String(), "release") {
		t.Errorf("printed:\n%s\nwant %q and only mutex_acquire", &out, want)
	}
}

func TestSlowlogUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"--servers", ""}, {"--servers", "x:1", "--top", "0"}, {"--servers", "x:1", "extra"}} {
		var stdout, stderr bytes.Buffer
		if code := run(t.Context(), append([]string{"slowlog"}, args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: redlock slowlog") {
			t.Errorf("redlock slowlog %q: exit %d, stderr %q; want exit 2 and the usage", args, code, &stderr)
		}
	}
}
