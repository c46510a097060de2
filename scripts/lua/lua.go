// Package lua holds the server-side scripts, one file per script, each
// opening with a header that names every KEYS[i] and ARGV[i] and the reply.
// The operation spec in package spec says which operation runs which script.
package lua

import (
	"embed"
	"io/fs"
)

//go:embed *.lua
var files embed.FS

// Source returns the text of the script file name (for example
// "mutex_acquire.lua"). It panics when the file is not embedded: the spec
// test checks that every script the spec names exists, so that is a build
// mistake, never a run-time condition.
func Source(name string) string {
	b, err := fs.ReadFile(files, name)
	if err != nil {
		panic("lua: " + err.Error())
	}
	return string(b)
}

// Names lists the embedded script files in lexical order.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
