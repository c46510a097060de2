package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/redlockgo/redlock/spec"
)

// rendered is render(spec.Ops), failing the test on error.
func rendered(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := render(spec.Ops)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// A hand edit of a generated file, or a spec or script change without
// `go generate`, leaves the committed code out of step with the spec.
// go test runs in gen/, so the module root is "..".
func TestGeneratedFilesAreFresh(t *testing.T) {
	for path, want := range rendered(t) {
		got, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Errorf("%s: %v; run go generate ./...", path, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale or edited by hand (first difference on line %d); run go generate ./...", path, firstDiffLine(got, want))
		}
	}
}

// firstDiffLine is the 1-based line where a and b first differ.
func firstDiffLine(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return bytes.Count(a[:n], []byte("\n")) + 1
}

// Map iteration must not leak into the output, or every run would rewrite
// the files and the freshness test would flake.
func TestRenderIsDeterministic(t *testing.T) {
	a, b := rendered(t), rendered(t)
	for path := range a {
		if !bytes.Equal(a[path], b[path]) {
			t.Errorf("%s differs between two renders", path)
		}
	}
	if len(a) != len(b) {
		t.Errorf("two renders gave %d and %d files", len(a), len(b))
	}
}

// Go tools (gofmt, linters, coverage, review UIs) only treat a file as
// generated when its first line matches this exact rule.
var generatedLine = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func TestRenderedFilesAreMarkedGenerated(t *testing.T) {
	for path, src := range rendered(t) {
		first, _, _ := bytes.Cut(src, []byte("\n"))
		if !generatedLine.Match(first) {
			t.Errorf("%s: first line %q is not a Code generated ... DO NOT EDIT. line", path, first)
		}
	}
}

// The freshness test only guards the files render knows about: a client
// dropped from the list would leave its old adapter behind unchecked.
func TestRenderedPaths(t *testing.T) {
	want := []string{"driver/zz_generated.go", "driver/adapter/zz_generated.go", "conformance/faults/zz_generated.go"}
	for _, c := range clients {
		want = append(want, "drivers/"+c.pkg+"/zz_generated.go")
	}
	for _, pkg := range []string{"goredis", "redigo", "rueidis"} {
		if !slices.Contains(want, "drivers/"+pkg+"/zz_generated.go") {
			t.Errorf("client %s is missing from clients", pkg)
		}
	}
	var got []string
	for path := range rendered(t) {
		got = append(got, path)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("rendered %q, want %q", got, want)
	}
}
