package accuracy

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// Record is the evaluation as written to testdata: one line per incident
// and per healthy outcome, from which the tables of docs/accuracy.md are
// rendered, and against which a rerun of some of its seeds is compared.
type Record struct {
	Incidents []Incident
	Healthy   []HealthyOutcome
}

func modeTimes(m map[diagnosis.Mode]time.Duration) string {
	var out []string
	for _, k := range slices.Sorted(modeKeys(countOnce(m))) {
		out = append(out, fmt.Sprintf("%s@%v", k, m[k]))
	}
	return strings.Join(out, ",")
}

func parseModeTimes(s string) (map[diagnosis.Mode]time.Duration, error) {
	out := map[diagnosis.Mode]time.Duration{}
	if s == "" {
		return out, nil
	}
	for _, p := range strings.Split(s, ",") {
		name, at, ok := strings.Cut(p, "@")
		m, known := diagnosis.ParseMode(name)
		d, err := time.ParseDuration(at)
		if !ok || !known || err != nil {
			return nil, fmt.Errorf("bad mode and time %q", p)
		}
		out[m] = d
	}
	return out, nil
}

// Line is the healthy outcome's line in the record.
func (h HealthyOutcome) Line() string {
	return fmt.Sprintf("healthy\t%s\t%g\t%v\t%s\t%d\tqueued=%v\tpastknee=%t\traised=%s", h.Case.Shape.Name, h.Case.Load, h.Case.Interval, h.Format, h.Seed, h.Queued, h.PastKnee, modeTimes(h.Raised))
}

// Write writes the record, one line each, in order.
func (r *Record) Write(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, "# The failure-mode evaluation (make accuracy): one line per incident and per healthy run.")
	for _, in := range r.Incidents {
		fmt.Fprintln(bw, "incident\t"+in.Line())
	}
	for _, h := range r.Healthy {
		fmt.Fprintln(bw, h.Line())
	}
	return bw.Flush()
}

// ReadRecord parses what Write wrote.
func ReadRecord(rd io.Reader) (*Record, error) {
	r := &Record{}
	sc := bufio.NewScanner(rd)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		var err error
		switch {
		case f[0] == "incident" && len(f) == 10:
			var in Incident
			in, err = parseIncident(f[1:])
			r.Incidents = append(r.Incidents, in)
		case f[0] == "healthy" && len(f) == 9:
			var h HealthyOutcome
			h, err = parseHealthy(f[1:])
			r.Healthy = append(r.Healthy, h)
		default:
			err = fmt.Errorf("unknown line")
		}
		if err != nil {
			return nil, fmt.Errorf("record line %d %q: %w", n, line, err)
		}
	}
	return r, sc.Err()
}

func field(f, key string) (string, error) {
	v, ok := strings.CutPrefix(f, key+"=")
	if !ok {
		return "", fmt.Errorf("want %s=, have %q", key, f)
	}
	return v, nil
}

func parseIncident(f []string) (Incident, error) {
	in := Incident{Lever: sim.Lever(f[0]), Format: sim.Format(f[1])}
	var errs []error
	get := func(i int, key string) string {
		v, err := field(f[i], key)
		errs = append(errs, err)
		return v
	}
	seed, err := strconv.ParseUint(f[2], 10, 64)
	errs = append(errs, err)
	in.Seed = seed
	in.Supported = get(3, "supported") == "true"
	in.Detect, err = time.ParseDuration(get(4, "detect"))
	errs = append(errs, err)
	in.Raises, err = strconv.Atoi(get(5, "raises"))
	errs = append(errs, err)
	in.Held = get(6, "held") == "true"
	in.Clear, err = time.ParseDuration(get(7, "clear"))
	errs = append(errs, err)
	in.Others, err = parseModeTimes(get(8, "others"))
	errs = append(errs, err)
	for _, e := range errs {
		if e != nil {
			return in, e
		}
	}
	in.Detected = in.Detect >= 0 && in.Detect <= DetectWithin*DefaultEvalOptions().Settings.Window
	return in, nil
}

func parseHealthy(f []string) (HealthyOutcome, error) {
	s, ok := sim.ShapeByName(f[0])
	if !ok {
		return HealthyOutcome{}, fmt.Errorf("unknown shape %q", f[0])
	}
	load, err1 := strconv.ParseFloat(f[1], 64)
	iv, err2 := time.ParseDuration(f[2])
	seed, err3 := strconv.ParseUint(f[4], 10, 64)
	queued, err4 := field(f[5], "queued")
	q, err5 := time.ParseDuration(queued)
	pastKnee, err6 := field(f[6], "pastknee")
	past, err7 := strconv.ParseBool(pastKnee)
	raised, err8 := field(f[7], "raised")
	m, err9 := parseModeTimes(raised)
	for _, e := range []error{err1, err2, err3, err4, err5, err6, err7, err8, err9} {
		if e != nil {
			return HealthyOutcome{}, e
		}
	}
	return HealthyOutcome{Case: HealthyCase{Shape: s, Load: load, Interval: iv, Noise: HealthyNoise}, Seed: seed, Format: sim.Format(f[3]), Queued: q, PastKnee: past, Raised: m}, nil
}

// WriteHealthyMarkdown writes the healthy table: per shape, load and
// cadence, the runs that passed (HealthyOutcome.Pass), the modes
// raised, and for the loads past
// the knee when queue_growth was first raised (median / P90 / max).
func WriteHealthyMarkdown(w io.Writer, hs []HealthyOutcome) error {
	type key struct {
		shape string
		load  float64
		iv    time.Duration
	}
	var keys []key
	groups := map[key][]HealthyOutcome{}
	// The seeds each format ran, at and under the knee and past it.
	type fkey struct {
		past   bool
		format sim.Format
	}
	seeds := map[fkey]map[uint64]bool{}
	var fkeys []fkey
	for _, h := range hs {
		k := key{h.Case.Shape.Name, h.Case.Load, h.Case.Interval}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], h)
		fk := fkey{h.Case.Load > 1, h.Format}
		if seeds[fk] == nil {
			seeds[fk] = map[uint64]bool{}
			fkeys = append(fkeys, fk)
		}
		seeds[fk][h.Seed] = true
	}
	var b strings.Builder
	for _, past := range []bool{false, true} {
		// Formats that ran the same seeds, together.
		var sets []string
		byRange := map[string][]string{}
		for _, fk := range fkeys {
			if fk.past != past {
				continue
			}
			ss := slices.Sorted(maps.Keys(seeds[fk]))
			r := fmt.Sprintf("seeds %d to %d (%d)", ss[0], ss[len(ss)-1], len(ss))
			if _, ok := byRange[r]; !ok {
				sets = append(sets, r)
			}
			byRange[r] = append(byRange[r], string(fk.format))
		}
		if len(sets) == 0 {
			continue
		}
		var parts []string
		for _, r := range sets {
			parts = append(parts, r+" in "+strings.Join(byRange[r], ", "))
		}
		what := "At and under the knee"
		if past {
			what = "Past the knee"
		}
		fmt.Fprintf(&b, "%s: %s.\n", what, strings.Join(parts, "; "))
	}
	if len(hs) > 0 {
		fmt.Fprintf(&b, "%v of healthy traffic per run, one scrape in %d missed and intervals jittered by up to ±%.0f %%.\n\n",
			HealthyRunLength, HealthyNoise.MissOneIn, 100*HealthyNoise.Jitter)
	}
	b.WriteString("| shape | knee (req/s) | load | scrapes every | runs | passed | modes raised (runs) | queue_growth raised after the start (median / P90 / max) | after the engine's queue began |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range keys {
		g := groups[k]
		pass := 0
		count := map[diagnosis.Mode]int{}
		var q, qq []time.Duration
		pastKnee := 0
		for _, h := range g {
			if h.Case.Load <= 1 && h.PastKnee {
				pastKnee++
			}
			if h.Pass() {
				pass++
			}
			for m, at := range h.Raised {
				count[m]++
				if m == diagnosis.QueueGrowth {
					q = append(q, at)
					if h.Queued >= 0 {
						qq = append(qq, at-h.Queued)
					}
				}
			}
		}
		var raised []string
		for _, m := range slices.Sorted(modeKeys(count)) {
			raised = append(raised, fmt.Sprintf("%s (%d)", m, count[m]))
		}
		if pastKnee > 0 {
			raised = append(raised, fmt.Sprintf("of which while past the knee by the truth (%d)", pastKnee))
		}
		want := "nothing raised, but what is under way past the knee"
		switch c := (HealthyCase{Shape: g[0].Case.Shape, Load: k.load}); {
		case c.Overload():
			want = fmt.Sprintf("queue_growth alone within %v of the engine's queue", NameWithin())
		case k.load > 1:
			want = "nothing but queue_growth"
		}
		// The engine's queue is the onset of an overload only: under
		// capacity it stands and empties all run long.
		qs, qqs := "—", "—"
		if k.load > 1 {
			qs = quantiles(q)
		}
		if (HealthyCase{Shape: g[0].Case.Shape, Load: k.load}).Overload() {
			qqs = quantiles(qq)
		}
		fmt.Fprintf(&b, "| %s | %.2f | %gx knee | %v | %d | %s: %s | %s | %s | %s |\n", k.shape, ShapeKnees[k.shape], k.load, k.iv, len(g), want, pct(pass, len(g)), strings.Join(raised, ", "), qs, qqs)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
