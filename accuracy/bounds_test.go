package accuracy

import (
	"bytes"
	"flag"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// The SLOs of the window check: the one the bounds were found wrong with
// (TTFT ≤ 500 ms, TPOT ≤ 50 ms, no error, aborts included), and for
// SGLang, which has neither finish reasons nor a per-request TPOT
// histogram, TTFT ≤ 500 ms and end-to-end latency ≤ 20 s.
func windowSLOs() map[sim.Format]goodput.SLO {
	return map[sim.Format]goodput.SLO{
		sim.FormatVLLM: {Name: "chat", Objectives: []goodput.Objective{
			obj(goodput.KindTTFT, 0.5, 0.99), obj(goodput.KindTPOT, 0.05, 0.95), obj(goodput.KindError, 0, 0.99)}},
		sim.FormatSGLang: {Name: "chat", Objectives: []goodput.Objective{
			obj(goodput.KindTTFT, 0.5, 0.99), obj(goodput.KindE2E, 20, 0.95)}},
	}
}

// The incident the former bounds failed in: a queue that grows for 150 s,
// its clients cut off, healthy traffic again, over and over; seed 7, read
// every second. Added up interval by interval the bounds put the truth
// outside them (a request judged on TTFT in one interval and on its
// finish in a later one was subtracted in both); drawn from each window's
// totals, the truth lies within them up to the requests in flight at the
// window's two ends, in every window of 1 and 5 minutes.
func TestWindowBoundsQueueGrowthIncident(t *testing.T) {
	sc, err := sim.ParseScenario("healthy:60s,queue_growth:150s,abort,healthy:150s,repeat")
	if err != nil {
		t.Fatal(err)
	}
	d := 12 * time.Minute
	if raceEnabled {
		d = 7 * time.Minute
	}
	windows := []time.Duration{time.Minute, 5 * time.Minute}
	res, err := RunWindows(WindowOptions{Scenario: sc, Seed: 7, Duration: d, Formats: []sim.Format{sim.FormatVLLM},
		Cadences: []time.Duration{time.Second}, Windows: windows, SLOs: windowSLOs()})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	for k, w := range windows {
		if r.Windows[k] == 0 {
			t.Fatalf("%v: no window checked", w)
		}
		if r.Outside[k] != 0 || r.OutsideCounters[k] != 0 {
			t.Errorf("%v windows: truth outside the window bounds ± edge in %d of %d, outside the counters' increase ± edge in %d",
				w, r.Outside[k], r.Windows[k], r.OutsideCounters[k])
		}
		if r.TokOutside[k] != 0 || r.TokMissing[k] != 0 {
			t.Errorf("%v windows: true good tokens outside the token window bounds (edge included) in %d of %d, no token bounds in %d",
				w, r.TokOutside[k], r.Windows[k], r.TokMissing[k])
		}
	}
	// The per-interval token sums on the same reads: the case must still
	// be one that tells the two apart.
	if r.TokOutsideSums[1] == 0 {
		t.Errorf("the per-interval token sums held in every 5m window: the scenario no longer shows what the token window bounds are for")
	}
	// The former definition on the same reads: the case must still be one
	// that tells the two apart.
	if r.OutsideFormer[1] == 0 {
		t.Errorf("the former per-interval bounds held in every 5m window: the scenario no longer shows what it is for")
	}
	t.Logf("%+v", r)
}

// windowGrid is the Done-when grid: every lever held 150 s between
// healthy spells, with and without its backlog aborted, seeds unused
// elsewhere, both formats with latency histograms, 1 s and 5 s cadence,
// windows of 1, 5 and 30 minutes over 32 simulated minutes.
type windowCase struct {
	lever sim.Lever
	abort bool
}

func (c windowCase) scenario() string {
	ab := ""
	if c.abort {
		ab = "abort,"
	}
	return "healthy:60s," + string(c.lever) + ":150s," + ab + "healthy:150s,repeat"
}

var (
	windowSeedsFlag = flag.Int("window.seeds", 3, "with -update, run the window table on the first N of its seeds 11, 12, 13")
	windowSeeds     = []uint64{11, 12, 13}
	windowLengths   = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}
	windowDuration  = 32 * time.Minute
)

func windowCases() []windowCase {
	var out []windowCase
	for _, l := range sim.Levers {
		out = append(out, windowCase{l, false})
		if l != sim.Healthy { // nothing to cut off
			out = append(out, windowCase{l, true})
		}
	}
	return out
}

// runWindowCase runs one case on every seed; it may run on its own
// goroutine, so it reports errors without stopping the test.
func runWindowCase(t *testing.T, c windowCase, seeds []uint64) []WindowRow {
	sc, err := sim.ParseScenario(c.scenario())
	if err != nil {
		t.Error(err)
		return nil
	}
	var runs [][]WindowResult
	for _, seed := range seeds {
		res, err := RunWindows(WindowOptions{Scenario: sc, Seed: seed, Duration: windowDuration,
			Formats: []sim.Format{sim.FormatVLLM, sim.FormatSGLang}, Cadences: []time.Duration{time.Second, 5 * time.Second},
			Windows: windowLengths, SLOs: windowSLOs()})
		if err != nil {
			t.Errorf("%s seed %d: %v", c.scenario(), seed, err)
			return nil
		}
		runs = append(runs, res)
	}
	var rows []WindowRow
	for _, r := range MergeWindowResults(runs) {
		rows = append(rows, WindowRow{Scenario: c.scenario(), Seeds: seeds, WindowResult: r})
	}
	return rows
}

const (
	windowBegin = "<!-- window-bounds:begin (go test ./accuracy -run TestWindowBoundsTable -update) -->"
	windowEnd   = "<!-- window-bounds:end -->"
)

// TestWindowBoundsTable checks the truth against the bounds in every
// window of the grid. With -update it runs the whole grid (every lever,
// both ways, on -window.seeds of the three seeds: about 4 minutes of one
// core per seed) and writes the table into docs/accuracy.md; without, it
// runs one case (queue_growth, its backlog aborted) on the seeds the doc
// was written with and fails unless its lines in the doc are what this
// run prints, so a doc older than the code fails.
func TestWindowBoundsTable(t *testing.T) {
	cases, seeds := windowCases(), windowSeeds[:min(max(*windowSeedsFlag, 1), len(windowSeeds))]
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(windowBegin)), bytes.Index(doc, []byte(windowEnd))
	if !*updateDocs {
		if raceEnabled || testing.Short() {
			t.Skip("32 simulated minutes per seed: run without -race and -short")
		}
		if i < 0 || j < i {
			t.Fatalf("%s has no window table: run go test ./accuracy -run TestWindowBoundsTable -update", docPath)
		}
		// One case, on the seeds the doc's table was written with.
		cases = []windowCase{{sim.QueueGrowth, true}}
		m := regexp.MustCompile(regexp.QuoteMeta(cases[0].scenario()) + `\s+vllm\s+1s\s+(\S+)`).FindSubmatch(doc[i:j])
		if m == nil {
			t.Fatalf("%s's window table has no line for %s", docPath, cases[0].scenario())
		}
		seeds = nil
		for _, f := range strings.Split(string(m[1]), ",") {
			s, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatalf("seeds %q in the doc: %v", m[1], err)
			}
			seeds = append(seeds, s)
		}
	}
	// Three cases at a time: each is one simulator and four readers on one
	// goroutine.
	results := make([][]WindowRow, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 3)
	for i, c := range cases {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runWindowCase(t, c, seeds)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var rows []WindowRow
	for _, r := range results {
		rows = append(rows, r...)
	}
	for _, r := range rows {
		for k, w := range windowLengths {
			if r.Windows[k] == 0 || r.Outside[k] != 0 || r.OutsideCounters[k] != 0 {
				t.Errorf("%s, %s at %v, %v windows: truth outside [lower − edge, upper + edge] in %d (counters %d) of %d",
					r.Scenario, r.Format, r.Cadence, w, r.Outside[k], r.OutsideCounters[k], r.Windows[k])
			}
			if r.TokOutside[k] != 0 || r.TokMissing[k] != 0 {
				t.Errorf("%s, %s at %v, %v windows: true good tokens outside the token window bounds (edge included) in %d, no token bounds in %d, of %d",
					r.Scenario, r.Format, r.Cadence, w, r.TokOutside[k], r.TokMissing[k], r.Windows[k])
			}
		}
	}
	var table bytes.Buffer
	if err := WriteWindowTable(&table, windowLengths, rows); err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %q … %q markers", docPath, windowBegin, windowEnd)
		}
		section := windowBegin + "\n\n```\n" + table.String() + "```\n\n" + windowEnd
		out := append(append(slices.Clone(doc[:i]), section...), doc[j+len(windowEnd):]...)
		if err := os.WriteFile(docPath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	// The columns' padding depends on every row of the table: compare
	// cells.
	cells := regexp.MustCompile(`\s{2,}`)
	inDoc := map[string]bool{}
	for _, line := range strings.Split(string(doc[i:j]), "\n") {
		inDoc[cells.ReplaceAllString(strings.TrimSpace(line), "|")] = true
	}
	for _, line := range strings.Split(strings.TrimRight(table.String(), "\n"), "\n")[1:] {
		if !inDoc[cells.ReplaceAllString(strings.TrimSpace(line), "|")] {
			t.Errorf("docs/accuracy.md's window table is stale (go test ./accuracy -run TestWindowBoundsTable -update); this run prints\n%s", line)
		}
	}
}
