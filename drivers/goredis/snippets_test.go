package goredis_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The user documents whose Go snippets must be the code of runnable
// examples, and the example files of the repository's modules.
var (
	snippetDocs  = []string{"README.md", "docs/migrating.md", "docs/options.md", "docs/cluster.md"}
	exampleFiles = []string{"drivers/goredis/*_example_test.go", "drivers/goredis/example_test.go",
		"drivers/redigo/example_test.go", "drivers/rueidis/example_test.go", "drivers/auto/example_test.go",
		"otel/example_test.go"}
)

// snippetAddrs are the addresses the documents write out where the
// examples read them from the environment.
var snippetAddrs = strings.NewReplacer(
	`"localhost:6379"`, `addr`,
	`[]string{"redis-a:6379", "redis-b:6379", "redis-c:6379"}`, `quorumAddrs`,
)

var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// TestSnippetsAreExamples checks that every Go snippet of the user
// documents is the code of an example, run against a server by go test:
// each paragraph of a snippet (lines between blank lines) must appear,
// line by line, in one example file. Only addresses may differ.
func TestSnippetsAreExamples(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Skip("not in the repository: ", err)
	}
	var examples []string
	for _, pattern := range exampleFiles {
		names, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil || len(names) == 0 {
			t.Fatalf("no example files match %s (%v)", pattern, err)
		}
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			examples = append(examples, "\n"+trimLines(string(b))+"\n")
		}
	}
	for _, doc := range snippetDocs {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatch(string(b), -1) {
			for _, para := range strings.Split(m[1], "\n\n") {
				para = trimLines(snippetAddrs.Replace(para))
				if para == "" || strings.HasPrefix(para, "import") {
					continue
				}
				found := false
				for _, e := range examples {
					if strings.Contains(e, "\n"+para+"\n") {
						found = true
						break
					}
				}
				if !found {
					t.Errorf("%s: this snippet is not the code of an example in %v:\n%s", doc, exampleFiles, para)
				}
			}
		}
	}
}

// trimLines drops the indentation and the blank lines of s.
func trimLines(s string) string {
	var lines []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
