package core

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/spec"
)

// TestFormatsMatchSpec checks core's side of the formats it shares with
// the scripts (spec_test checks the scripts' side), and that no other
// file of core writes one of them out again.
func TestFormatsMatchSpec(t *testing.T) {
	ours := map[string]string{
		"ticketInfix":     ticketInfix,
		"clientInfix":     clientInfix,
		"shardInfix":      shardInfix,
		"digestHexDigits": strconv.Itoa(digestHexDigits),
		"marksNone":       strconv.Itoa(marksNone),
		"marksMissed":     strconv.Itoa(marksMissed),
		"marksAll":        strconv.Itoa(marksAll),
	}
	for _, f := range spec.Formats {
		if got, ok := ours[f.Name]; !ok || got != f.Value {
			t.Errorf("core/formats.go: %s = %q, spec/formats.go says %q", f.Name, got, f.Value)
		}
		delete(ours, f.Name)
	}
	for name := range ours {
		t.Errorf("core/formats.go declares %s, which spec/formats.go lacks", name)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || name == "formats.go" {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range spec.Formats {
			if _, err := strconv.Atoi(f.Value); err == nil {
				continue // a number: too common to look for
			}
			for line := range strings.Lines(string(src)) {
				if code, _, _ := strings.Cut(line, "//"); strings.Contains(code, f.Value) {
					t.Errorf("%s spells out %q: use %s (formats.go)", name, f.Value, f.Name)
				}
			}
		}
	}
	if digestBound != 1<<52 {
		t.Errorf("digestBound = %d, want 2^52: a Lua double holds integers exactly up to 2^53", int64(digestBound))
	}
}
