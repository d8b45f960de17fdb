package docscheck

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository root, from this package's directory.
const root = "../.."

// docs returns README.md and every Markdown file under docs/, as paths
// relative to the repository root.
func docs(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func read(t *testing.T, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// brokenLinks returns what is wrong with each relative link of the
// Markdown file rel (relative to the repository root): a target that does
// not exist, or an #anchor that no heading or <a id> of the target
// defines. Links with a scheme (https:, mailto:) are not followed.
func brokenLinks(t *testing.T, rel string) []string {
	t.Helper()
	var out []string
	anchors := map[string]map[string]bool{}
	for _, l := range Links(read(t, rel)) {
		u, err := url.Parse(l.Target)
		if err != nil {
			out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": "+err.Error())
			continue
		}
		if u.Scheme != "" || u.Host != "" {
			continue
		}
		target := rel
		if u.Path != "" {
			if strings.HasPrefix(u.Path, "/") {
				out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": an absolute path does not resolve on GitHub's file view; make it relative")
				continue
			}
			target = filepath.ToSlash(filepath.Join(filepath.Dir(rel), u.Path))
			if strings.HasPrefix(target, "../") {
				out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": leaves the repository")
				continue
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": no such file")
				continue
			}
		}
		if u.Fragment == "" {
			continue
		}
		if !strings.HasSuffix(target, ".md") {
			out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": an anchor into a file that is not Markdown")
			continue
		}
		if anchors[target] == nil {
			anchors[target] = Anchors(read(t, target))
		}
		if !anchors[target][u.Fragment] {
			out = append(out, rel+":"+itoa(l.Line)+": "+l.Target+": "+target+" has no heading or anchor #"+u.Fragment)
		}
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

// Every relative link of README.md and docs/**/*.md resolves: the file
// or directory exists, and an #anchor names a heading of the target (as
// GitHub spells its slug) or an <a id>.
func TestRelativeLinksResolve(t *testing.T) {
	files := docs(t)
	if len(files) < 10 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		for _, msg := range brokenLinks(t, f) {
			t.Error(msg)
		}
	}
}

// The link check catches what it is for: a fixture with a missing file, a
// missing anchor, an anchor spelt as the heading instead of its slug, and
// good links of each kind that must pass.
func TestBrokenLinksAreCaught(t *testing.T) {
	dir := filepath.Join(root, "internal", "docscheck", "testdata")
	got := brokenLinks(t, "internal/docscheck/testdata/links.md")
	want := []string{
		"internal/docscheck/testdata/links.md:8: missing.md: no such file",
		"internal/docscheck/testdata/links.md:9: target.md#no-such-heading: internal/docscheck/testdata/target.md has no heading or anchor #no-such-heading",
		"internal/docscheck/testdata/links.md:10: target.md#Exact-goodput: internal/docscheck/testdata/target.md has no heading or anchor #Exact-goodput",
		"internal/docscheck/testdata/links.md:11: #nowhere: internal/docscheck/testdata/links.md has no heading or anchor #nowhere",
	}
	if !slices.Equal(got, want) {
		t.Errorf("in %s got\n%s\nwant\n%s", dir, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// GitHub's slugs, worked by hand from headings of these docs.
func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Exact goodput from request traces (OTLP)":       "exact-goodput-from-request-traces-otlp",
		"From a sweep file: `goodput-exporter capacity`": "from-a-sweep-file-goodput-exporter-capacity",
		"queue_growth":                                       "queue_growth",
		"Live: where is today's traffic?":                    "live-where-is-todays-traffic",
		"Capacity: the knee under the SLO":                   "capacity-the-knee-under-the-slo",
		"Render on demand, and after the parser's fast path": "render-on-demand-and-after-the-parsers-fast-path",
		"GPU power, energy and attribution":                  "gpu-power-energy-and-attribution",
		"Live knee on a diurnal ramp":                        "live-knee-on-a-diurnal-ramp",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := Anchors("# Setup\n\n```sh\n# not a heading\n```\n\n## Setup\n\n<a id=\"fig-x\"></a>\n")
	for _, k := range []string{"setup", "setup-1", "fig-x"} {
		if !a[k] {
			t.Errorf("no anchor %q in %v", k, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("a comment in a code block was taken for a heading")
	}
}

// docs/README.md links every Markdown file of docs/, each directly, or a
// file of a subdirectory through a link to its directory (the runbooks,
// one per alert, are generated by the mixin and indexed by their
// directory).
func TestDocsIndexLinksEveryDoc(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range Links(read(t, "docs/README.md")) {
		u, err := url.Parse(l.Target)
		if err != nil || u.Scheme != "" || u.Path == "" {
			continue
		}
		linked[strings.TrimSuffix(filepath.ToSlash(filepath.Join("docs", u.Path)), "/")] = true
	}
	n := 0
	for _, f := range docs(t) {
		if !strings.HasPrefix(f, "docs/") || f == "docs/README.md" {
			continue
		}
		n++
		if !linked[f] && !linked[filepath.ToSlash(filepath.Dir(f))] {
			t.Errorf("docs/README.md does not link %s", f)
		}
	}
	if n < 10 {
		t.Errorf("only %d docs under docs/", n)
	}
}
