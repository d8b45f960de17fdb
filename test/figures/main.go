// Command figures measures every figure of docs/benchmarks.md's "Cited
// figures" table again and rewrites the table, with the commit, date and
// machine it was measured on (`make figures`, about twenty minutes:
// make test from an empty build cache is one of the figures).
//
// Each figure names the packages it measures (a package and what it
// imports, as `go list -deps -test` lists them, within this module) and
// the commit it was measured at; internal/docscheck's
// TestCitedFiguresAreNotStale fails when one of those packages changed
// after that commit. So the measured packages must be committed before
// measuring: figures refuses to run on a working tree where they differ
// from HEAD.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/figures"
)

// The parse benchmark's bodies: the vLLM capture reconstructed from
// source (664 samples) and its multiplications to 100 and 302 models.
var parseBodies = []struct{ bench, id, what string }{
	{"vllm-v1-latest", "fig-parse-664", "parsing a 664-sample vLLM body (`v1-latest-from-source.prom`), steady state: CPU time a sample (user + system of the benchmark process, its garbage collection included) and speed against expfmt's TextParser and Prometheus' PromParser on the same bytes in the same run (`BenchmarkParse`, medians of 5)"},
	{"synthetic-30k", "fig-parse-33k", "the same for 100 models (33,200 samples, 4.1 MB)"},
	{"synthetic-100k", "fig-parse-100k", "the same for 302 models (100,264 samples, 12 MB)"},
}

// Roots are what each kind of figure measures: its packages are these and
// what they import. The command that computes the figures is one too.
var (
	parseRoots  = []string{"./collector", "./test/figures"}
	renderRoots = []string{"./exporter", "./test/figures"}
	daemonRoots = []string{"./cmd/exporter", "./test/figures"}
	proxyRoots  = []string{"./proxy", "./test/figures"}
	testRoots   = []string{"./..."}
)

const (
	begin = "<!-- figures:begin (written by make figures) -->"
	end   = "<!-- figures:end -->"
)

func main() {
	doc := flag.String("doc", "docs/benchmarks.md", "the document whose table is rewritten")
	count := flag.Int("count", 5, "runs of each parse benchmark")
	flag.Parse()
	if err := run(*doc, *count); err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
}

type figure struct {
	id, value, what string
	roots           []string
}

func run(doc string, count int) error {
	for _, roots := range [][]string{parseRoots, renderRoots, daemonRoots, proxyRoots, testRoots} {
		paths, err := figures.Paths(roots)
		if err != nil {
			return err
		}
		out, err := figures.Output("git", append([]string{"status", "--porcelain", "--"}, paths...)...)
		if err != nil {
			return err
		}
		if strings.TrimSpace(out) != "" {
			return fmt.Errorf("commit what is measured first (each figure names the commit it was measured at):\n%s", out)
		}
	}
	commit, err := figures.Output("git", "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return err
	}
	commit = strings.TrimSpace(commit)
	load, _ := os.ReadFile("/proc/loadavg")
	started := time.Now().UTC()

	var figs []figure
	fmt.Fprintln(os.Stderr, "figures: parse benchmarks")
	ns, err := parseBench(count)
	if err != nil {
		return err
	}
	for _, b := range parseBodies {
		g, e, p := ns[b.bench+"/goodput"], ns[b.bench+"/expfmt"], ns[b.bench+"/promparser"]
		if g == 0 || e == 0 || p == 0 {
			return fmt.Errorf("benchmark %s: no figure (goodput %v, expfmt %v, promparser %v)", b.bench, g, e, p)
		}
		figs = append(figs, figure{b.id, fmt.Sprintf("%.0f ns of CPU a sample, %.1f× expfmt's speed, %.1f× PromParser's", g, e/g, p/g), b.what, parseRoots})
	}

	fmt.Fprintln(os.Stderr, "figures: render against parse")
	r, err := renderBench(count)
	if err != nil {
		return err
	}
	figs = append(figs, figure{"fig-render-vs-parse", fmt.Sprintf("%.1f ms a render, %.2f× a steady parse", r["render-ms/op"], r["render/parse"]),
		"rendering the exposition of one vLLM engine of 100 models (its series, not gzip) against parsing its 33,200-sample body, in the same loop (`BenchmarkRenderVsParse`, medians of 5)", renderRoots})

	fmt.Fprintln(os.Stderr, "figures: the measuring proxy")
	pc, err := benchMedians("^BenchmarkChunkCPU$/^paced$", "30x", count, "./proxy/")
	if err != nil {
		return err
	}
	pl, err := benchMedians("^BenchmarkAddedLatency$/^streams=1$", "3x", min(count, 3), "./proxy/")
	if err != nil {
		return err
	}
	if pc["ratio"] == 0 || pc["reverseproxy-cpu-ns/chunk"] == 0 {
		return fmt.Errorf("BenchmarkChunkCPU reported no ratio: %v", pc)
	}
	ttfb, ok := pl["added-ttfb-p50-µs"]
	if !ok {
		return fmt.Errorf("BenchmarkAddedLatency reported no added-ttfb-p50-µs: %v", pl)
	}
	figs = append(figs,
		figure{"fig-proxy-cpu-per-chunk", fmt.Sprintf("%.2f×", pc["ratio"]),
			"CPU time per streamed chunk of the measuring proxy over a bare `httputil.ReverseProxy` in the same run, chunks arriving one at a time as a decoding engine writes them (`BenchmarkChunkCPU/paced`, medians)", proxyRoots},
		figure{"fig-proxy-added-latency", fmt.Sprintf("%.0f µs", ttfb),
			"time to first byte through the measuring proxy minus direct, p50, one stream (`BenchmarkAddedLatency/streams=1`, median; wall time, as latency is)", proxyRoots})

	fmt.Fprintln(os.Stderr, "figures: the whole daemon (about three minutes)")
	d, err := daemon()
	if err != nil {
		return err
	}
	for _, f := range []struct{ key, id, format, what string }{
		{"cpu-100-models-5s", "fig-cpu-100-models-5s", "%s %% of a core", "the whole daemon's CPU time (user + system, `/proc`) over 60 s for one vLLM engine of 100 models (33,200 samples, values moving every scrape) collected every 5 s (the default), Prometheus reading `/metrics` every 5 s"},
		{"cpu-100-models-15s", "fig-cpu-100-models-15s", "%s %% of a core", "the same, the next 60 s, Prometheus reading every 15 s"},
		{"rss-100-models", "fig-rss-100-models", "%s MiB", "VmRSS of the daemon at the end of those two minutes"},
		{"memory-per-target", "fig-memory-per-target", "%s MiB a target", "what a target adds to the daemon's anonymous resident memory (RssAnon), 200 ordinary vLLM engines (the 664-sample body) against an idle daemon, as the chart runs it (192 MiB limit)"},
		{"idle-anon", "fig-idle-memory", "%s MiB", "anonymous resident memory (RssAnon) of the daemon with no target, 3 s after its start, as the chart runs it"},
		{"fleet-200-anon", "fig-fleet-200-memory", "%s MiB", "peak anonymous resident memory (RssAnon, sampled every 10 ms) of the daemon for those 200 engines over 30 s, against the chart's 192 MiB limit"},
		{"fleet-200-cpu", "fig-fleet-200-cpu", "%s %% of a core", "its CPU time over those 30 s (collection every 5 s, `/metrics` read every 15 s)"},
	} {
		v, ok := d[f.key]
		if !ok {
			return fmt.Errorf("the daemon's test printed no %s", f.key)
		}
		figs = append(figs, figure{f.id, fmt.Sprintf(f.format, v), f.what, daemonRoots})
	}

	fmt.Fprintln(os.Stderr, "figures: make test from an empty build cache (about ten minutes)")
	wall, cpu, err := testSuite()
	if err != nil {
		return err
	}
	figs = append(figs, figure{"fig-make-test-cold", fmt.Sprintf("%s of wall time, %s of CPU time", wall.Round(time.Second), cpu.Round(time.Second)),
		"`make test` (gofmt, go vet, every test with `-race`, the accuracy CI share, the chart's tests) from an empty Go build cache (`GOCACHE` a new directory; modules already downloaded, Debian's packages installed), with promtool and Chromium required as CI requires them; CPU time of make and every process it waited for", testRoots})

	md, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	out, err := rewrite(string(md), table(figs, commit, started, strings.Fields(string(load))))
	if err != nil {
		return err
	}
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "figures: %s rewritten (%s)\n", doc, time.Since(started).Round(time.Second))
	return nil
}

var benchLine = regexp.MustCompile(`^BenchmarkParse/([^/]+/[a-z]+)-\d+\s.*\s([\d.]+) cpu-ns/sample`)

// parseBench runs the parse benchmarks and returns the median CPU time a
// sample of each (the benchmark process's, user and system, so the
// garbage collector's work counts and a loaded machine's waits do not),
// in ns, by "body/parser".
func parseBench(count int) (map[string]float64, error) {
	var names []string
	for _, b := range parseBodies {
		names = append(names, b.bench)
	}
	out, err := figures.Output("go", "test", "-run", "^$", "-count", strconv.Itoa(count),
		"-bench", "^BenchmarkParse$/^("+strings.Join(names, "|")+")$/^(goodput|expfmt|promparser)$", "./collector/")
	if err != nil {
		return nil, err
	}
	runs := map[string][]float64{}
	for _, line := range strings.Split(out, "\n") {
		if m := benchLine.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			runs[m[1]] = append(runs[m[1]], v)
		}
	}
	med := map[string]float64{}
	for k, v := range runs {
		slices.Sort(v)
		med[k] = v[len(v)/2]
	}
	return med, nil
}

// renderBench runs BenchmarkRenderVsParse and returns the median of each
// metric it reports.
func renderBench(count int) (map[string]float64, error) {
	med, err := benchMedians("^BenchmarkRenderVsParse$", "", count, "./exporter/")
	if err != nil {
		return nil, err
	}
	if med["render/parse"] == 0 {
		return nil, fmt.Errorf("BenchmarkRenderVsParse reported no render/parse: %v", med)
	}
	return med, nil
}

// benchMedians runs the benchmarks that match in pkg and returns the
// median of each metric they report (benchtime "": go test's default).
func benchMedians(bench, benchtime string, count int, pkg string) (map[string]float64, error) {
	args := []string{"test", "-run", "^$", "-count", strconv.Itoa(count), "-bench", bench}
	if benchtime != "" {
		args = append(args, "-benchtime", benchtime)
	}
	out, err := figures.Output("go", append(args, pkg)...)
	if err != nil {
		return nil, err
	}
	runs := map[string][]float64{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		for _, m := range benchMetric.FindAllStringSubmatch(line, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			runs[m[2]] = append(runs[m[2]], v)
		}
	}
	med := map[string]float64{}
	for k, v := range runs {
		slices.Sort(v)
		med[k] = v[len(v)/2]
	}
	return med, nil
}

var benchMetric = regexp.MustCompile(`(-?[\d.]+) (\S+)`)

// testSuite runs make test with an empty build cache and returns its wall
// time and the CPU time (user + system) of make and all it waited for.
// The staleness check is told to stand aside: the figures it checks are
// the ones being measured again.
func testSuite() (wall, cpu time.Duration, err error) {
	cache, err := os.MkdirTemp("", "figures-gocache-")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(cache)
	cmd := exec.Command("make", "test")
	cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOODPUT_REQUIRE_PROMTOOL=1", "GOODPUT_REQUIRE_CHROMIUM=1", figures.MeasuringEnv+"=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("make test: %v:\n%s", err, buf.String())
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// daemon runs cmd/exporter's TestFigures and returns what it printed.
func daemon() (map[string]string, error) {
	cmd := exec.Command("go", "test", "-count=1", "-run", "^TestFigures$", "-v", "-timeout", "15m", "./cmd/exporter/")
	cmd.Env = append(os.Environ(), "GOODPUT_FIGURES=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v:\n%s", err, buf.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "figure" {
			got[f[1]] = f[2]
		}
	}
	return got, nil
}

func table(figs []figure, commit string, at time.Time, load []string) string {
	cpu := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	goVersion, _ := figures.Output("go", "env", "GOVERSION")
	la := "unknown"
	if len(load) >= 3 {
		la = strings.Join(load[:3], " ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", begin)
	fmt.Fprintf(&b, "Measured by `make figures` (`go run ./test/figures`) at commit `%s`, %s,\n", commit, at.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "on %d cores of \"%s\", %s, load average %s at the start.\n\n", runtime.NumCPU(), cpu, strings.TrimSpace(goVersion), la)
	b.WriteString("| id | figure | what | measures | commit | command |\n|---|---|---|---|---|---|\n")
	for _, f := range figs {
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s | `%s` and what they import | `%s` | `make figures` |\n",
			f.id, f.id, f.value, f.what, strings.Join(f.roots, "`, `"), commit)
	}
	fmt.Fprintf(&b, "%s", end)
	return b.String()
}

// rewrite replaces what is between the markers (the markers included).
func rewrite(md, block string) (string, error) {
	i, j := strings.Index(md, begin), strings.Index(md, end)
	if i < 0 || j < i {
		return "", errors.New("no figures markers in the document: " + begin + " … " + end)
	}
	return md[:i] + block + md[j+len(end):], nil
}
