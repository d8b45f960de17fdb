package docscheck

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// figures returns the cited figures of docs/benchmarks.md, id → figure:
// the rows of its table headed "| id | figure |", each id given as an
// <a id> anchor and as code.
func figures(t *testing.T) map[string]string {
	t.Helper()
	tables := TablesWith(read(t, "docs/benchmarks.md"), "id", "figure")
	if len(tables) != 1 {
		t.Fatalf("docs/benchmarks.md has %d tables of cited figures, want 1", len(tables))
	}
	out := map[string]string{}
	for _, row := range tables[0].Rows {
		ids := htmlID.FindStringSubmatch(row[0])
		code := Code(row[0])
		if ids == nil || len(code) != 1 || code[0] != ids[1] || !strings.HasPrefix(ids[1], "fig-") {
			t.Fatalf("docs/benchmarks.md: figure row %q: want <a id=\"fig-…\"></a>`fig-…`, the same id twice", row[0])
		}
		if out[ids[1]] != "" {
			t.Fatalf("docs/benchmarks.md: figure %s twice", ids[1])
		}
		out[ids[1]] = row[1]
	}
	if len(out) == 0 {
		t.Fatal("docs/benchmarks.md cites no figure")
	}
	return out
}

var (
	numbers = regexp.MustCompile(`\d+(?:[.,]\d+)*`)
	// restated are the kinds of figure only docs/benchmarks.md measures:
	// a share of a core and CPU time per collection cycle. Elsewhere they
	// may appear only as the text of a link to a cited figure.
	restated = []*regexp.Regexp{
		regexp.MustCompile(`\d[\d.,]*\s*%\s*of a core`),
		regexp.MustCompile(`\d[\d.,]*\s*ms (?:of CPU )?per cycle`),
	}
)

// figureProblems returns what is wrong with the figures of one doc (name,
// its Markdown md): a link to a figure id docs/benchmarks.md lacks, a
// link whose text gives other numbers than the figure, and a figure of a
// measured kind stated without a link.
func figureProblems(name, md string, figs map[string]string) []string {
	var out []string
	for _, l := range Links(md) {
		u, err := url.Parse(l.Target)
		if err != nil || u.Scheme != "" || path.Base(u.Path) != "benchmarks.md" || !strings.HasPrefix(u.Fragment, "fig-") {
			continue
		}
		fig, ok := figs[u.Fragment]
		switch {
		case !ok:
			out = append(out, name+":"+itoa(l.Line)+": cites "+u.Fragment+", which docs/benchmarks.md does not list")
		case !slices.Equal(numbers.FindAllString(l.Text, -1), numbers.FindAllString(fig, -1)):
			out = append(out, name+":"+itoa(l.Line)+": cites "+u.Fragment+" as \""+l.Text+"\", docs/benchmarks.md says \""+fig+"\"")
		}
	}
	for i, line := range Lines(md) {
		// Cited figures are link text: drop the links, and code spans.
		line = link.ReplaceAllStringFunc(codeSpan.ReplaceAllString(line, "CODE"), func(m string) string {
			if strings.Contains(m, "benchmarks.md#fig-") {
				return "CITED"
			}
			return m
		})
		for _, re := range restated {
			if m := re.FindString(line); m != "" {
				out = append(out, name+":"+itoa(i+1)+": \""+m+"\" restates a measured figure: cite docs/benchmarks.md's (a link to benchmarks.md#fig-…)")
			}
		}
	}
	return out
}

// No doc but docs/benchmarks.md states a share of a core or CPU time per
// cycle, and every figure cited from it gives the numbers it has: one
// source per figure, so that two docs cannot disagree about it.
func TestFiguresAreCitedNotRestated(t *testing.T) {
	figs := figures(t)
	cited := 0
	for _, f := range docs(t) {
		if f == "docs/benchmarks.md" {
			continue
		}
		md := read(t, f)
		cited += strings.Count(md, "benchmarks.md#fig-")
		for _, msg := range figureProblems(f, md, figs) {
			t.Error(msg)
		}
	}
	if cited == 0 {
		t.Error("no doc cites a figure of docs/benchmarks.md")
	}
}

// The figure check catches the disagreement it was made for
// (docs/reliability.md once said 0.5 % and 0.84 % of a core where
// docs/benchmarks.md said 0.37 % and 0.52 %), a stale citation and an
// unknown id, and passes a good citation.
func TestDisagreeingFiguresAreCaught(t *testing.T) {
	figs := map[string]string{"fig-cpu-15s": "0.37 % of a core", "fig-rss": "105–115 MiB"}
	md := strings.Join([]string{
		"| one engine | 0.5 % of a core at 5 s, 0.84 % with a 5 s scrape |",
		"Good: [0.37 % of a core](benchmarks.md#fig-cpu-15s), [105–115 MiB](../docs/benchmarks.md#fig-rss).",
		"Stale: [109 MiB](benchmarks.md#fig-rss). Unknown: [1 %](benchmarks.md#fig-gone).",
		"Also 25 ms per cycle, and `0.5 % of a core` in code is an example.",
		"```",
		"0.5 % of a core in a code block",
		"```",
	}, "\n")
	got := figureProblems("x.md", md, figs)
	want := []string{
		`x.md:3: cites fig-rss as "109 MiB", docs/benchmarks.md says "105–115 MiB"`,
		`x.md:3: cites fig-gone, which docs/benchmarks.md does not list`,
		`x.md:1: "0.5 % of a core" restates a measured figure: cite docs/benchmarks.md's (a link to benchmarks.md#fig-…)`,
		`x.md:4: "25 ms per cycle" restates a measured figure: cite docs/benchmarks.md's (a link to benchmarks.md#fig-…)`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
