// Package docscheck reads the project's Markdown (README.md and docs/)
// the way GitHub renders it, so that tests can hold the docs to the code:
// links and their anchors, and the tables that list code facts. Its own
// tests check that every relative link of README.md and docs/ resolves,
// that docs/README.md indexes every doc, that a figure measured in
// docs/benchmarks.md is cited rather than restated, that every series
// the daemon's source names is documented in one doc, and that the alert
// and recording-rule tables say what the generated rules do. It also
// lists and reads the daemon's pinned expositions (GoldenExpositions),
// which these tests and the mixin's lint both check against. Only tests
// import it; it imports nothing of the project.
package docscheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Link is a Markdown inline link or image.
type Link struct {
	Text, Target string
	Line         int // 1-based
	Image        bool
}

// Table is a Markdown pipe table: its header cells and the cells of each
// row, trimmed; Line is the header's 1-based line.
type Table struct {
	Header []string
	Rows   [][]string
	Line   int
}

// Lines returns the lines of md outside fenced code blocks, each with its
// 1-based number; fenced lines come back empty, so numbers stay right.
func Lines(md string) []string {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")):
			fence = t[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return lines
}

var (
	codeSpan = regexp.MustCompile("`+[^`]*`+")
	link     = regexp.MustCompile(`(!?)\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	htmlID   = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	heading  = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// Links returns the inline links and images of md, outside code blocks
// and code spans (a code span inside a link's text is kept as "CODE").
func Links(md string) []Link {
	var out []Link
	for i, l := range Lines(md) {
		l = codeSpan.ReplaceAllString(l, "CODE")
		for _, m := range link.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Text: m[2], Target: m[3], Line: i + 1, Image: m[1] == "!"})
		}
	}
	return out
}

// Slug is GitHub's anchor for a heading's text: lower case, Markdown
// emphasis and code marks dropped, every character that is not a letter,
// a digit, a space, a hyphen or an underscore dropped, spaces turned into
// hyphens.
func Slug(text string) string {
	// A link in a heading anchors on its text.
	text = link.ReplaceAllString(text, "$2")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Anchors returns every anchor md defines: its headings' slugs (a repeated
// slug gets -1, -2, … as GitHub numbers them) and the id or name of its
// <a> tags.
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range Lines(md) {
		if m := heading.FindStringSubmatch(l); m != nil {
			s := Slug(m[2])
			if n := seen[s]; n > 0 {
				out[s+"-"+strconv.Itoa(n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlID.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// Tables returns the pipe tables of md outside code blocks.
func Tables(md string) []Table {
	var out []Table
	lines := Lines(md)
	for i := 0; i+1 < len(lines); i++ {
		if !isRow(lines[i]) || !isDelimiter(lines[i+1]) {
			continue
		}
		t := Table{Header: Cells(lines[i]), Line: i + 1}
		j := i + 2
		for ; j < len(lines) && isRow(lines[j]); j++ {
			t.Rows = append(t.Rows, Cells(lines[j]))
		}
		out = append(out, t)
		i = j - 1
	}
	return out
}

// TablesWith returns the tables of md whose header starts with the
// given cells.
func TablesWith(md string, header ...string) []Table {
	var out []Table
	for _, t := range Tables(md) {
		if len(t.Header) < len(header) {
			continue
		}
		ok := true
		for i, h := range header {
			ok = ok && t.Header[i] == h
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

func isRow(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "|") }

var delimiter = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)

func isDelimiter(l string) bool { return delimiter.MatchString(strings.TrimSpace(l)) }

// Cells splits a table row at the pipes that are not escaped (\|) and not
// inside a code span, and trims each cell.
func Cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	if strings.HasSuffix(row, "|") && !strings.HasSuffix(row, `\|`) {
		row = row[:len(row)-1]
	}
	var cells []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(row); i++ {
		c := row[i]
		switch {
		case c == '\\' && i+1 < len(row) && row[i+1] == '|':
			cur.WriteByte('|')
			i++
			continue
		case c == '`':
			code = !code
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

var codeWord = regexp.MustCompile("`([^`]+)`")

// Code returns the contents of the code spans of s, in order.
func Code(s string) []string {
	var out []string
	for _, m := range codeWord.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
