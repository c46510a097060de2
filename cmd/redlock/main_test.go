package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("redlock: exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(drivers) {
		t.Fatalf("want one line per driver (%d), got:\n%s", len(drivers), &stdout)
	}
	for i, d := range drivers {
		var name string
		var first, second uint64
		var took int
		_, err := fmt.Sscanf(lines[i], "%s ok    lock/contend/unlock/fence %d→%d  (%d µs)", &name, &first, &second, &took)
		if err != nil || name != d.name || second <= first {
			t.Errorf("line %d = %q, want %q, ok, and an increasing fence (%v)", i, lines[i], d.name, err)
		}
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"nope"}, 2, `unknown command "nope"`},
		{[]string{"demo", "extra"}, 2, "unexpected arguments"},
		{[]string{"help"}, 0, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("redlock %q: exit %d, stderr %q; want exit %d, stderr containing %q", tc.args, code, &stderr, tc.code, tc.stderr)
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(out, "usage: redlock") {
			t.Errorf("redlock %q printed no usage:\n%s", tc.args, out)
		}
	}
}
