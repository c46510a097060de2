package matrix

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf8"
)

// legend gives each distinct reason of a not-applicable cell a letter, in
// table order, so that a cell shows one character.
type legend struct {
	reasons []string
}

func (l *legend) letter(reason string) string {
	for i, r := range l.reasons {
		if r == reason {
			return letterAt(i)
		}
	}
	l.reasons = append(l.reasons, reason)
	return letterAt(len(l.reasons) - 1)
}

func letterAt(i int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	if i < len(letters) {
		return letters[i : i+1]
	}
	return letterAt(i/len(letters)-1) + letters[i%len(letters):i%len(letters)+1]
}

// symbol is how a cell shows: ✓ passed (with a letter when some of its
// cases were not applicable), ✗ failed, ? skipped or missing, a letter
// for not applicable; blank when the run has no such cell.
func (l *legend) symbol(c Cell, ok bool) string {
	switch {
	case !ok:
		return ""
	case c.Status == Pass && c.Reason != "":
		return "✓" + l.letter(c.Reason)
	case c.Status == Pass:
		return "✓"
	case c.Status == NA:
		return l.letter(c.Reason)
	case c.Status == Fail:
		return "✗"
	}
	return "?"
}

// Summary is one line: the cells by outcome, and how long the run took.
func (r *Result) Summary() string {
	passed := 0
	for _, rr := range r.Reruns {
		if rr.Passed {
			passed++
		}
	}
	s := r.tally()
	if passed > 0 {
		s += fmt.Sprintf("; %d failed cases passed when run again alone", passed)
	}
	return fmt.Sprintf("%s (%v)", s, time.Duration(r.Seconds*float64(time.Second)).Round(time.Second))
}

// tally counts the cells by outcome.
func (r *Result) tally() string {
	n := r.Counts()
	s := fmt.Sprintf("%d cells: %d passed, %d not applicable, %d failed", len(r.Cells), n[Pass], n[NA], n[Fail])
	if bad := n[Skipped] + n[Missing]; bad > 0 {
		s += fmt.Sprintf(", %d skipped or missing", bad)
	}
	return s
}

// WriteText writes the table for a terminal: rows primitive × strategy,
// columns driver × topology × server, then the legend, the checks and
// every failure with its output.
func (r *Result) WriteText(w io.Writer) {
	type column struct{ driver, topology, server string }
	var cols []column
	for _, d := range r.Drivers {
		for _, t := range r.Topologies {
			for _, s := range r.Servers {
				cols = append(cols, column{d, t, s.Name})
			}
		}
	}
	codes := serverCodes(r.Servers)
	var l legend
	rowLabel := 0
	for _, p := range r.Primitives {
		for _, s := range r.Strategies {
			rowLabel = max(rowLabel, utf8.RuneCountInString(p+"  "+s+"  "))
		}
	}
	// Cells first, so that the column widths fit their symbols.
	grid := map[[2]int]string{}
	width := make([]int, len(cols))
	for i := range width {
		width[i] = 2
	}
	row := 0
	for _, p := range r.Primitives {
		for _, s := range r.Strategies {
			for i, c := range cols {
				cell, ok := r.Cell(c.driver, c.server, c.topology, s, p)
				grid[[2]int{row, i}] = l.symbol(cell, ok)
				width[i] = max(width[i], utf8.RuneCountInString(grid[[2]int{row, i}])+1)
			}
			row++
		}
	}
	// Widen the last column of a span whose label is wider than it.
	fit := func(key func(column) string) {
		for i := 0; i < len(cols); {
			j, span := i, 0
			for ; j < len(cols) && key(cols[j]) == key(cols[i]); j++ {
				span += width[j]
			}
			if need := utf8.RuneCountInString(label(key(cols[i]))) + 1; need > span {
				width[j-1] += need - span
			}
			i = j
		}
	}
	fit(func(c column) string { return c.driver + "\x00" + c.topology })
	fit(func(c column) string { return c.driver })
	header := func(key func(column) string, show func(column) string) {
		line := strings.Repeat(" ", rowLabel)
		for i := 0; i < len(cols); {
			j, span := i, 0
			for ; j < len(cols) && key(cols[j]) == key(cols[i]); j++ {
				span += width[j]
			}
			line += pad(show(cols[i]), span)
			i = j
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	header(func(c column) string { return c.driver }, func(c column) string { return c.driver })
	header(func(c column) string { return c.driver + "\x00" + c.topology }, func(c column) string { return c.topology })
	header(func(c column) string { return fmt.Sprint(c) }, func(c column) string { return codes[c.server] })
	row = 0
	for _, p := range r.Primitives {
		for k, s := range r.Strategies {
			name := p
			if k > 0 {
				name = ""
			}
			line := pad(fmt.Sprintf("%-*s  %s", len(longest(r.Primitives)), name, s), rowLabel)
			for i := range cols {
				line += pad(grid[[2]int{row, i}], width[i])
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			row++
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "✓ passed   ✗ failed   ? skipped without a reason, or never reported   a letter: not applicable, because")
	for i, reason := range l.reasons {
		fmt.Fprintf(w, "  %-2s %s\n", letterAt(i), reason)
	}
	fmt.Fprint(w, "servers:")
	for _, s := range r.Servers {
		fmt.Fprintf(w, "  %s = %s (%s)", codes[s.Name], s.Name, s.Version)
	}
	fmt.Fprintln(w)
	r.writeChecks(w)
	r.writeRuns(w)
	for _, rr := range r.Reruns {
		verdict := "failed again"
		if rr.Passed {
			verdict = "passed"
		}
		fmt.Fprintf(w, "\nRERUN %s %s: failed, then %s when run again alone; the first run said:\n", rr.Package, rr.Test, verdict)
		for _, line := range rr.Output {
			fmt.Fprintln(w, "  "+line)
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "\nFAIL %s %s\n", f.Package, f.Test)
		for _, line := range f.Output {
			fmt.Fprintln(w, "  "+line)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.Summary())
}

// writeRuns says when each test binary ran: the longest, and how they
// overlapped, set the matrix's time.
func (r *Result) writeRuns(w io.Writer) {
	for _, t := range r.Runs {
		if t.Seconds > 0 {
			fmt.Fprintf(w, "test binary %s on %s: %.0fs from %.0fs\n", path.Base(t.Package), t.Server, t.Seconds, t.Start)
		}
	}
}

// writeChecks sums up the tests outside the cells, naming those that did
// not pass.
func (r *Result) writeChecks(w io.Writer) {
	n := map[Status]int{}
	for _, c := range r.Checks {
		n[c.Status]++
	}
	fmt.Fprintf(w, "checks outside the cells: %d passed, %d not applicable, %d skipped, %d failed\n", n[Pass], n[NA], n[Skipped], n[Fail])
	for _, c := range r.Checks {
		switch c.Status {
		case Fail:
			fmt.Fprintf(w, "  ✗ %s %s\n", c.Driver, c.Name)
		case Skipped:
			fmt.Fprintf(w, "  ? %s %s: %s\n", c.Driver, c.Name, c.Reason)
		}
	}
}

// WriteMarkdown writes the table as Markdown, one table per server
// (rows primitive × strategy, columns driver × topology), and the legend.
func (r *Result) WriteMarkdown(w io.Writer) {
	var l legend
	for _, s := range r.Servers {
		fmt.Fprintf(w, "**%s** (%s)\n\n", s.Name, s.Version)
		fmt.Fprint(w, "| primitive | strategy |")
		for _, d := range r.Drivers {
			for _, t := range r.Topologies {
				fmt.Fprintf(w, " %s<br>%s |", d, t)
			}
		}
		fmt.Fprint(w, "\n|---|---|")
		fmt.Fprint(w, strings.Repeat(":---:|", len(r.Drivers)*len(r.Topologies)))
		fmt.Fprintln(w)
		for _, p := range r.Primitives {
			for _, st := range r.Strategies {
				fmt.Fprintf(w, "| %s | %s |", p, st)
				for _, d := range r.Drivers {
					for _, t := range r.Topologies {
						c, ok := r.Cell(d, s.Name, t, st, p)
						sym := l.symbol(c, ok)
						if c.Status == NA || (c.Status == Pass && c.Reason != "") {
							// The letter as a footnote mark.
							sym = strings.TrimPrefix(sym, "✓")
							sym = map[bool]string{true: "✓", false: "n/a"}[c.Status == Pass] + "<sup>" + sym + "</sup>"
						}
						fmt.Fprintf(w, " %s |", sym)
					}
				}
				fmt.Fprintln(w)
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "✓ passed, ✗ failed, ? skipped without a reason or never reported, n/a not applicable:")
	fmt.Fprintln(w)
	for i, reason := range l.reasons {
		fmt.Fprintf(w, "- <sup>%s</sup> %s\n", letterAt(i), reason)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.tally()+".")
}

// serverCodes gives each server a short code for the column header: its
// first letter, or more letters when two servers share it.
func serverCodes(servers []Server) map[string]string {
	codes := map[string]string{}
	for n := 1; n < 8; n++ {
		seen, clash := map[string]bool{}, false
		for _, s := range servers {
			code := s.Name[:min(n, len(s.Name))]
			clash = clash || seen[code]
			seen[code], codes[s.Name] = true, code
		}
		if !clash {
			return codes
		}
	}
	for _, s := range servers {
		codes[s.Name] = s.Name
	}
	return codes
}

func label(key string) string {
	_, after, ok := strings.Cut(key, "\x00")
	if ok {
		return after
	}
	return key
}

func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

func longest(names []string) string {
	var l string
	for _, n := range names {
		if len(n) > len(l) {
			l = n
		}
	}
	return l
}
