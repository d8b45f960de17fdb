package docscheck

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// notDaemon are the directories whose Go files are not the daemon: the
// mixin reads series, the simulator writes engines' series, the
// evaluations and tests drive it.
var notDaemon = map[string]bool{
	".git": true, "mixin": true, "cmd/mixin-gen": true, "sim": true, "accuracy": true,
	"e2e": true, "deploy": true, "internal/docscheck": true, "testdata": true,
}

// fromLibraries are series the daemon exports through a library, with
// the source text that makes it do so.
var fromLibraries = map[string]string{
	"goodput_exporter_build_info": `versioncollector.NewCollector("goodput_exporter")`,
}

// notSeries are literals of the daemon's source that look like series
// names and are not: what each is.
var notSeries = map[string]string{
	"llm_request": "the name of vLLM's request span (otlp)",
}

var seriesLiteral = regexp.MustCompile(`"((?:llm|goodput_exporter)_[a-z0-9_]*[a-z0-9])"`)

// sourceSeries returns every series name the daemon's source spells: the
// string literals "llm_…" and "goodput_exporter_…" of its non-test Go
// files, with the file of the first one.
func sourceSeries(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	var all strings.Builder
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if notDaemon[rel] || notDaemon[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		all.Write(raw)
		for _, m := range seriesLiteral.FindAllStringSubmatch(string(raw), -1) {
			if out[m[1]] == "" && notSeries[m[1]] == "" {
				out[m[1]] = rel
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range fromLibraries {
		if !strings.Contains(all.String(), text) {
			t.Errorf("%s: no %s in the daemon's source", name, text)
		}
		out[name] = "library"
	}
	if len(out) < 80 {
		t.Fatalf("only %d series names in the source: is the walk right?", len(out))
	}
	return out
}

// goldenTypes returns the TYPE of every family in the daemon's pinned
// expositions.
func goldenTypes(t *testing.T) map[string]string {
	t.Helper()
	g, err := ReadGolden(root)
	if err != nil {
		t.Fatal(err)
	}
	return g.Types
}

// seriesNames returns the series a table cell names: its code spans less
// their labels; "…_baseline" after a name is that name with the suffix.
func seriesNames(cell string) []string {
	var out []string
	for _, c := range Code(cell) {
		name, _, _ := strings.Cut(c, "{")
		if rest, ok := strings.CutPrefix(name, "…"); ok && len(out) > 0 {
			name = out[len(out)-1] + rest
		}
		if strings.HasPrefix(name, "llm_") || strings.HasPrefix(name, "goodput_exporter_") {
			out = append(out, name)
		}
	}
	return out
}

// seriesDocs are the docs whose "| series |" tables document the daemon's
// series: every doc of docs/ but the measurements.
func seriesDocs(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range docs(t) {
		switch {
		case !strings.HasPrefix(f, "docs/") || strings.Count(f, "/") > 1:
		case f == "docs/reliability.md", f == "docs/benchmarks.md", f == "docs/accuracy.md", f == "docs/e2e.md":
		default:
			out = append(out, f)
		}
	}
	return out
}

// Every series name the daemon's source spells is in a "| series |" table
// of docs/ (the metrics reference, or the doc of its concern: GPU,
// capacity, failure modes), in the tables of one doc only, so that no two
// docs can describe it differently; every series those tables (and the
// README's table of the main series) name is one the source spells; and a
// table's type column says what the daemon's pinned expositions say.
func TestEverySeriesIsDocumentedOnce(t *testing.T) {
	src := sourceSeries(t)
	types := goldenTypes(t)
	documented := map[string]string{} // name → doc
	for _, f := range append(seriesDocs(t), "README.md") {
		for _, tab := range TablesWith(read(t, f), "series") {
			typeCol := -1
			for i, h := range tab.Header {
				if h == "type" {
					typeCol = i
				}
			}
			for _, row := range tab.Rows {
				names := seriesNames(row[0])
				if len(names) == 0 {
					t.Errorf("%s:%d: a series row names no series: %q", f, tab.Line, row[0])
				}
				for _, n := range names {
					if src[n] == "" {
						t.Errorf("%s: documents %s, which the daemon's source does not name", f, n)
					}
					if typeCol > 0 && typeCol < len(row) && types[n] != "" && !strings.HasPrefix(row[typeCol], types[n]) {
						t.Errorf("%s: %s is documented as %q, the daemon exports it as %s", f, n, row[typeCol], types[n])
					}
					if f == "README.md" {
						continue
					}
					if d := documented[n]; d != "" && d != f {
						t.Errorf("%s is documented in both %s and %s: keep one and link it", n, d, f)
					}
					documented[n] = f
				}
			}
		}
	}
	var missing []string
	for n, file := range src {
		if documented[n] == "" {
			missing = append(missing, n+" ("+file+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("no series table of docs/ documents %s", m)
	}
}

// The series check reads what a table cell names as the docs write it.
func TestSeriesNames(t *testing.T) {
	for cell, want := range map[string]string{
		"`llm_slo_requests_total{…,slo,objective}`":                                     "llm_slo_requests_total",
		"`llm_signal_kv_cache_per_running_request`, `…_baseline`":                       "llm_signal_kv_cache_per_running_request llm_signal_kv_cache_per_running_request_baseline",
		"`llm_slo_tokens_total{…,slo,objective=\"tpot\"}`, `llm_slo_good_tokens_total`": "llm_slo_tokens_total llm_slo_good_tokens_total",
		"`up` of Prometheus": "",
	} {
		if got := strings.Join(seriesNames(cell), " "); got != want {
			t.Errorf("seriesNames(%q) = %q, want %q", cell, got, want)
		}
	}
}
