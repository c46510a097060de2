// Package lua holds the server-side scripts, one file per script, each
// opening with a header that names every KEYS[i] and ARGV[i] and the reply.
// The operation spec in package spec says which operation runs which script.
package lua

import (
	"embed"
	"io/fs"
	"strings"
)

//go:embed *.lua lib/*.lua
var files embed.FS

// includePrefix starts a line that stands for a file of lib/: a script
// runs alone on the server, so the functions several scripts share are
// pasted into each.
const includePrefix = "-- #include "

// Source returns the text of the script file name (for example
// "mutex_acquire.lua"), with its include lines replaced by the files they
// name, each pasted once (a file that several includes name comes where
// the first names it). It panics when a file is not embedded: the spec
// test checks that every script the spec names exists, so that is a build
// mistake, never a run-time condition.
func Source(name string) string { return source(name, map[string]bool{}) }

func source(name string, pasted map[string]bool) string {
	b, err := fs.ReadFile(files, name)
	if err != nil {
		panic("lua: " + err.Error())
	}
	lines := strings.SplitAfter(string(b), "\n")
	for i, line := range lines {
		if lib, ok := strings.CutPrefix(strings.TrimSpace(line), includePrefix); ok {
			lines[i] = ""
			if !pasted[lib] {
				pasted[lib] = true
				lines[i] = source(lib, pasted)
			}
		}
	}
	return strings.Join(lines, "")
}

// Names lists the embedded script files in lexical order.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}
