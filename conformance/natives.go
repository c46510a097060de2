package conformance

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testNativeDetection checks, through the debug log, that each server's
// native compare-and-delete commands are detected: Valkey 9 has DELIFEQ,
// Redis 7 has neither it nor DELEX (Lua is used), miniredis has DELEX ...
// IFEQ. (Extensions always run a script: see extend.lua.)
func testNativeDetection(t *testing.T, h Harness, server, addr string) {
	var log bytes.Buffer
	e := env{h: h, addrs: []string{addr}, strategy: core.Poll}
	c := e.client(t, core.WithLogger(slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := ctxFor(t, 10*time.Second)
	l := mustLock(t, ctx, c.Mutex(name(t)).Lock)
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for cmd, want := range natives[server] {
		line := "command=" + cmd + " supported=" + map[bool]string{true: "true", false: "false"}[want]
		if !strings.Contains(log.String(), line) {
			t.Errorf("%s: the log does not say %q:\n%s", server, line, log.String())
		}
	}
}

// natives are the probes each server's log must show, and their outcome.
// DELEX is probed only where DELIFEQ is missing.
var natives = map[string]map[string]bool{
	"redis7":    {"ReleaseDelifeq": false, "ReleaseDelex": false},
	"redis8":    {"ReleaseDelifeq": false, "ReleaseDelex": false}, // DELEX is Redis 8.4's
	"valkey9":   {"ReleaseDelifeq": true},
	"miniredis": {"ReleaseDelifeq": false, "ReleaseDelex": true},
}
