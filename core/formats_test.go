package core

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/spec"
)

// TestFormatsMatchSpec checks core's side of the formats it shares with
// the scripts (spec_test checks the scripts' side), and that no other
// file of core or of its engines writes one of them out again.
func TestFormatsMatchSpec(t *testing.T) {
	ours := map[string]string{
		"ticketInfix":     line.TicketInfix,
		"clientInfix":     line.ClientInfix,
		"shardInfix":      line.ShardInfix,
		"oneServerSecret": line.OneServerSecret,
		"digestHexDigits": strconv.Itoa(digestHexDigits),
		"marksNone":       strconv.Itoa(marksNone),
		"marksMissed":     strconv.Itoa(marksMissed),
		"marksAll":        strconv.Itoa(marksAll),
		"leaseForced":     strconv.Itoa(leaseForced),
	}
	for _, f := range spec.Formats {
		if got, ok := ours[f.Name]; !ok || got != f.Value {
			t.Errorf("core/formats.go or internal/line/formats.go: %s = %q, spec/formats.go says %q", f.Name, got, f.Value)
		}
		delete(ours, f.Name)
	}
	for name := range ours {
		t.Errorf("core/formats.go declares %s, which spec/formats.go lacks", name)
	}
	names, err := filepath.Glob("*.go")
	more, err2 := filepath.Glob("../internal/*/*.go")
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	for _, name := range append(names, more...) {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == "formats.go" {
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
