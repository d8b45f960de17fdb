package demo

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// logRing keeps the last few log lines for the view.
type logRing struct {
	mu    sync.Mutex
	lines []string
	max   int
}

func newLogRing(n int) *logRing { return &logRing{max: n} }

func (r *logRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		r.lines = append(r.lines, l)
	}
	if len(r.lines) > r.max {
		r.lines = r.lines[len(r.lines)-r.max:]
	}
	return len(p), nil
}

func (r *logRing) last() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// reading is one parse of the daemon's /metrics.
type reading struct {
	at  time.Time
	mfs map[string]*dto.MetricFamily
}

// sum adds the samples of a family whose labels include want.
func (r reading) sum(name string, want map[string]string) (float64, bool) {
	mf := r.mfs[name]
	if mf == nil {
		return 0, false
	}
	total, found := 0.0, false
next:
	for _, m := range mf.Metric {
		for k, v := range want {
			ok := false
			for _, lp := range m.Label {
				if lp.GetName() == k && lp.GetValue() == v {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		}
	}
	return total, found
}

// windowTotals reads one target's and SLO's window totals from the
// daemon's own counters, the ones the recording rules read: judged and
// failed requests, per objective (by name, so that two readings line up)
// the possibly met and the judged, and the output-length counters.
func (r reading) windowTotals(target, slo string) (goodput.WindowTotals, bool) {
	want := map[string]string{"target": target, "slo": slo}
	var w goodput.WindowTotals
	var ok bool
	if w.Requests, ok = r.sum("llm_goodput_judged_requests_total", want); !ok {
		return w, false
	}
	w.Failed, _ = r.sum("llm_goodput_failed_requests_total", want)
	w.Output.Unmeasured, _ = r.sum("llm_goodput_output_length_unmeasured_requests_total", want)
	w.Output.Sum, _ = r.sum("llm_goodput_output_length_tokens_total", want)
	objs := map[string][2]float64{}
	type bucket struct{ le, n float64 }
	var buckets []bucket
	for _, name := range []string{"llm_goodput_objective_good_requests_total", "llm_goodput_objective_judged_requests_total", "llm_goodput_output_length_requests_total"} {
		mf := r.mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.Metric {
			lv := map[string]string{}
			for _, lp := range m.Label {
				lv[lp.GetName()] = lp.GetValue()
			}
			if lv["target"] != target || lv["slo"] != slo {
				continue
			}
			v := m.GetCounter().GetValue()
			switch name {
			case "llm_goodput_output_length_requests_total":
				if lv["le_tokens"] == "+Inf" {
					w.Output.Count = v
				} else if le, err := strconv.ParseFloat(lv["le_tokens"], 64); err == nil {
					buckets = append(buckets, bucket{le, v})
				}
			case "llm_goodput_objective_good_requests_total":
				o := objs[lv["objective"]]
				o[0] = v
				objs[lv["objective"]] = o
			default:
				o := objs[lv["objective"]]
				o[1] = v
				objs[lv["objective"]] = o
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(objs)) {
		w.Good = append(w.Good, objs[name][0])
		w.Judged = append(w.Judged, objs[name][1])
	}
	slices.SortFunc(buckets, func(x, y bucket) int { return cmp.Compare(x.le, y.le) })
	for _, b := range buckets {
		w.Output.Bounds = append(w.Output.Bounds, b.le)
		w.Output.Cum = append(w.Output.Cum, b.n)
	}
	return w, true
}

// windowGoodTokens is the good-token rate's bounds between two readings, from
// the window's totals (goodput.WindowTokenBounds, as the recording rules
// take them); "-" where the window has none.
func windowGoodTokens(a, b reading, target, slo string, secs float64) (string, string) {
	wa, okA := a.windowTotals(target, slo)
	wb, okB := b.windowTotals(target, slo)
	if !okA || !okB || secs <= 0 {
		return "-", "-"
	}
	tb, ok := goodput.WindowTokenBounds(wa, wb, 0)
	if !ok {
		return "-", "-"
	}
	return fmt.Sprintf("%.1f", tb.Lower/secs), fmt.Sprintf("%.1f", tb.Upper/secs)
}

// goodTokens is the GOOD TOK/S cell: the window's bounds
// (windowGoodTokens), or, where the daemon says its tokens are an
// estimate (llm_goodput_tokens_bounded 0: no output-length histogram, or
// a per-token objective), the intervals' figures of
// llm_goodput_tokens_total added up, marked "~", as the recording rules
// fall back to them; "-" where neither is there.
func goodTokens(a, b reading, target, slo string, secs float64) (string, string) {
	lo, hi := windowGoodTokens(a, b, target, slo, secs)
	if lo != "-" || secs <= 0 {
		return lo, hi
	}
	if est, ok := b.sum("llm_goodput_tokens_bounded", map[string]string{"target": target, "slo": slo}); !ok || est != 0 {
		return lo, hi
	}
	var r [2]float64
	for i, bd := range []string{"lower", "upper"} {
		want := map[string]string{"target": target, "slo": slo, "bound": bd}
		x, ok1 := a.sum("llm_goodput_tokens_total", want)
		y, ok2 := b.sum("llm_goodput_tokens_total", want)
		if !ok1 || !ok2 || y < x {
			return lo, hi
		}
		r[i] = (y - x) / secs
	}
	return fmt.Sprintf("~%.1f", r[0]), fmt.Sprintf("%.1f", r[1])
}

// demoView redraws a table of what the daemon exports, as rates over the
// last window of readings: what an operator would graph.
type demoView struct {
	metricsURL string
	farm       *Farm
	slo        map[string]string // target -> the SLO shown for it
	logs       *logRing
	out        io.Writer
	tty        bool
	speed      float64
	history    []reading
	// verdict gives the evidence lines of a target's raised modes.
	verdict func(target string) []string
	// minSpan is the shortest wall time a rate is taken over: the daemon's
	// counters step once a scrape, so over less than two scrapes a rate is
	// one step over however little time passed between two readings (on a
	// loaded machine, milliseconds), a number as wide as it is wrong.
	minSpan time.Duration
	// lag is how late a finished request can reach each count: its span
	// reaches the receiver up to a feed interval later, its histogram
	// samples the daemon up to a scrape later. Exact is shown lagged by it,
	// beside the bounds over the same requests (sameRequests); 0 compares
	// exact as it arrives.
	lag time.Duration
}

// window is the wall time rates are taken over.
const window = 10 * time.Second

func (v *demoView) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	frames := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, err := v.read(ctx)
		if err != nil {
			continue
		}
		v.history = append(v.history, r)
		for len(v.history) > 2 && r.at.Sub(v.history[1].at) >= window+3*v.lag {
			v.history = v.history[1:]
		}
		frames++
		// Without a terminal (a pipe, a test), print every fifth frame.
		if v.tty || frames%5 == 0 {
			v.draw()
		}
	}
}

func (v *demoView) read(ctx context.Context) (reading, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, v.metricsURL, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reading{}, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return reading{}, err
	}
	return reading{at: time.Now(), mfs: mfs}, nil
}

func (v *demoView) draw() {
	if len(v.history) < 2 {
		return
	}
	b := v.history[len(v.history)-1]
	a := v.before(b.at.Add(-window))
	if a == nil {
		a = &v.history[0]
	}
	if b.at.Sub(a.at) < v.minSpan {
		return
	}
	secs := b.at.Sub(a.at).Seconds() * v.speed // rates per simulated second
	rate := func(name string, want map[string]string) string {
		x, okA := a.sum(name, want)
		y, okB := b.sum(name, want)
		if !okA || !okB || secs <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", (y-x)/secs)
	}
	ratio := func(num, den string, want map[string]string) string {
		x1, ok1 := a.sum(num, want)
		y1, ok2 := b.sum(num, want)
		x2, ok3 := a.sum(den, want)
		y2, ok4 := b.sum(den, want)
		if !ok1 || !ok2 || !ok3 || !ok4 || y2-x2 <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", (y1-x1)/(y2-x2))
	}
	gauge := func(name string, want map[string]string, format string) string {
		x, ok := b.sum(name, want)
		if !ok {
			return "-"
		}
		return fmt.Sprintf(format, x)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "goodput-exporter demo: %s\n(rates per simulated second over the last %v of wall time; Ctrl-C stops)\n\n", v.metricsURL, window)
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	var notes []string
	fmt.Fprintln(tw, "TARGET\tSLO\tSIM LEVER\tUP\tGOOD TOK/S\tEXACT\tTOK/S\tTTFT\tTPOT\tNO ERR\tPOWER W\tJ/TOK\tUSD/1M")
	for _, en := range v.farm.Engines {
		t := map[string]string{"target": en.Name}
		slo := v.slo[en.Name]
		obj := func(o string) map[string]string {
			return map[string]string{"target": en.Name, "slo": slo, "objective": o}
		}
		bound := func(bd string) map[string]string {
			return map[string]string{"target": en.Name, "slo": slo, "bound": bd}
		}
		var lever sim.Lever
		en.srv.Do(func(e *sim.Engine) { lever = e.Lever() })
		lo, hi := goodTokens(*a, b, en.Name, slo, secs)
		exact := rate("llm_goodput_tokens_total", bound("exact"))
		if same, ok := v.sameRequests(b, en.Name, slo); ok {
			lo, hi, exact = same.lo, same.hi, same.exact
			notes = append(notes, same.note)
		} else if strings.HasPrefix(lo, "~") {
			where := "exact goodput: the measuring proxy, docs/proxy.md"
			if exact != "-" {
				where = "EXACT: the measuring proxy's spans, as they arrive (docs/proxy.md)"
			}
			notes = append(notes, en.Name+": no lower bound (TPOT judged per token); "+where)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s..%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			en.Name, slo, lever, gauge("llm_up", t, "%.0f"), lo, hi,
			exact,
			rate("llm_generation_tokens_total", t),
			ratio("llm_slo_good_requests_total", "llm_slo_requests_total", obj("ttft")),
			ratio("llm_slo_good_requests_total", "llm_slo_requests_total", obj("tpot")),
			ratio("llm_slo_good_requests_total", "llm_slo_requests_total", obj("error")),
			gauge("llm_engine_gpu_power_watts", t, "%.0f"),
			ratio("llm_engine_gpu_energy_joules_total", "llm_generation_tokens_total", t),
			v.costPerMillion(*a, b, en.Name))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(&buf, "%s\n", clip("  "+n, viewWidth))
	}
	buf.WriteString("\n")
	tw = tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tWAITING\tSLOPE/S\tRUNNING\tCEILING\tKV\tPREEMPT/S\tHIT RATIO\tFAILURE MODE (llm_failure_mode)")
	for _, en := range v.farm.Engines {
		t := map[string]string{"target": en.Name}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", en.Name,
			gauge("llm_requests_waiting", t, "%.0f"), gauge("llm_signal_waiting_slope", t, "%+.1f"),
			gauge("llm_requests_running", t, "%.0f"), gauge("llm_signal_running_ceiling", t, "%.0f"),
			gauge("llm_kv_cache_usage_ratio", t, "%.2f"), rate("llm_preemptions_total", t),
			ratio("llm_prefix_cache_hits_total", "llm_prefix_cache_queries_total", t),
			raisedModes(b, en.Name))
	}
	tw.Flush()
	if v.verdict != nil {
		for _, en := range v.farm.Engines {
			for _, line := range v.verdict(en.Name) {
				fmt.Fprintf(&buf, "%s\n", clip("  "+en.Name+" "+line, viewWidth))
			}
		}
	}
	if lines := v.logs.last(); len(lines) > 0 {
		buf.WriteString("\nlatest daemon log lines:\n")
		for _, l := range lines {
			fmt.Fprintf(&buf, "%s\n", clip("  "+l, viewWidth))
		}
	}
	buf.WriteString("\n")
	// No line wider than the terminal, whatever the values: a table's
	// widest cell (several raised modes, a long lever name) is cut, not
	// wrapped into the next row.
	var out bytes.Buffer
	if v.tty {
		out.WriteString("\033[H\033[2J")
	}
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if body, ok := strings.CutSuffix(l, "\n"); ok {
			out.WriteString(clip(body, viewWidth) + "\n")
		} else {
			out.WriteString(clip(l, viewWidth))
		}
	}
	v.out.Write(out.Bytes())
}

// viewWidth is the widest line the view draws: it fits a 120-column
// terminal.
const viewWidth = 120

// clip cuts a line to n characters.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// raisedModes reads the verdict from the daemon's own series.
func raisedModes(r reading, target string) string {
	mf := r.mfs["llm_failure_mode"]
	if mf == nil {
		return "-"
	}
	var names []string
	seen := false
	for _, m := range mf.Metric {
		var mode, tg string
		for _, lp := range m.Label {
			switch lp.GetName() {
			case "mode":
				mode = lp.GetValue()
			case "target":
				tg = lp.GetValue()
			}
		}
		if tg != target {
			continue
		}
		seen = true
		if m.Gauge.GetValue() == 1 {
			names = append(names, mode)
		}
	}
	switch {
	case !seen:
		return "-"
	case len(names) == 0:
		return "none"
	}
	return strings.Join(names, ", ")
}

// costPerMillion is the hourly cost over the good-token rate at the lower
// goodput bound (the higher cost), from the window's totals.
func (v *demoView) costPerMillion(a, b reading, target string) string {
	cost, ok := b.sum("llm_engine_hourly_cost", map[string]string{"target": target})
	wa, okA := a.windowTotals(target, v.slo[target])
	wb, okB := b.windowTotals(target, v.slo[target])
	secs := b.at.Sub(a.at).Seconds() * v.speed
	if !ok || !okA || !okB || secs <= 0 {
		return "-"
	}
	tb, okT := goodput.WindowTokenBounds(wa, wb, 0)
	if !okT || !(tb.Lower > 0) {
		return "-"
	}
	return fmt.Sprintf("%.3f", cost/3600/(tb.Lower/secs)*1e6)
}

// before is the newest reading at or before t; nil when there is none.
func (v *demoView) before(t time.Time) *reading {
	for i := len(v.history) - 1; i >= 0; i-- {
		if !v.history[i].at.After(t) {
			return &v.history[i]
		}
	}
	return nil
}

// after is the oldest reading at or after t; nil when there is none.
func (v *demoView) after(t time.Time) *reading {
	for i := range v.history {
		if !v.history[i].at.Before(t) {
			return &v.history[i]
		}
	}
	return nil
}

// sameCells are a row's GOOD TOK/S bounds and EXACT cells over the same
// requests, and the line that says which.
type sameCells struct{ lo, hi, exact, note string }

// sameRequests puts exact goodput beside bounds over the same requests.
// EXACT is the good tokens of the spans that arrived over the window
// [ea, eb], eb a lag before the newest reading: requests that finished
// between ea-lag and eb. The bounds beside it are the window bounds of
// the scrapes that can have counted them: the upper bound from a reading
// a lag before ea to the newest (every one of those requests, and some
// more), the lower bound from a lag after ea to a lag before eb (only
// requests whose spans have all arrived). Each is widened, as the
// daemon's self-check widens its own, by the requests in flight at its
// window's two ends (a request's TTFT is observed at its first token, its
// span at its end), which the note states with the self-check. false
// where the target has no exact series or no token bounds.
func (v *demoView) sameRequests(b reading, target, slo string) (sameCells, bool) {
	want := map[string]string{"target": target, "slo": slo, "bound": "exact"}
	if _, ok := b.sum("llm_goodput_tokens_total", want); !ok || v.lag <= 0 {
		return sameCells{}, false
	}
	// Good tokens that are an estimate, not bounds (no output-length
	// histogram, or an objective judged per token): nothing to bound exact
	// with; the row says so instead.
	if est, ok := b.sum("llm_goodput_tokens_bounded", map[string]string{"target": target, "slo": slo}); ok && est == 0 {
		return sameCells{}, false
	}
	none := sameCells{lo: "-", hi: "-", exact: "-", note: target + ": exact beside its bounds once the view holds " + (window + 2*v.lag).String() + " of readings"}
	eb := v.before(b.at.Add(-v.lag))
	if eb == nil {
		return none, true
	}
	ea := v.before(eb.at.Add(-window))
	if ea == nil || eb.at.Sub(ea.at) < v.minSpan {
		return none, true
	}
	ox := v.before(ea.at.Add(-v.lag))
	if ox == nil {
		return none, true
	}
	x1, okX1 := ea.sum("llm_goodput_tokens_total", want)
	x2, okX2 := eb.sum("llm_goodput_tokens_total", want)
	wo, ok1 := ox.windowTotals(target, slo)
	wb, ok2 := b.windowTotals(target, slo)
	if !okX1 || !okX2 || !ok1 || !ok2 {
		return none, true
	}
	// A request's TTFT is observed at its first token, its span and the
	// joint's count come when it finishes: the requests in flight at a
	// window's two ends (running + waiting) may have been judged in part
	// outside it, and widen its bounds by what they can carry.
	inFlight := func(r *reading) float64 {
		t := map[string]string{"target": target}
		run, _ := r.sum("llm_requests_running", t)
		wait, _ := r.sum("llm_requests_waiting", t)
		return run + wait
	}
	outerEdge := inFlight(ox) + inFlight(&b)
	outer, ok := goodput.WindowTokenBounds(wo, wb, outerEdge)
	if !ok {
		return none, true
	}
	lower, innerEdge := 0.0, 0.0
	ix, iy := v.after(ea.at.Add(v.lag)), v.before(eb.at.Add(-v.lag))
	if ix != nil && iy != nil && iy.at.After(ix.at) {
		wi, ok1 := ix.windowTotals(target, slo)
		wj, ok2 := iy.windowTotals(target, slo)
		innerEdge = inFlight(ix) + inFlight(iy)
		if ib, ok := goodput.WindowTokenBounds(wi, wj, innerEdge); ok1 && ok2 && ok {
			lower = ib.Lower
		}
	}
	secs := eb.at.Sub(ea.at).Seconds() * v.speed
	check := "no self-check yet"
	if c, ok := b.sum("llm_goodput_exact_within_bounds", map[string]string{"target": target, "slo": slo}); ok {
		check = fmt.Sprintf("self-check %.0f", c)
	}
	return sameCells{
		lo: fmt.Sprintf("%.1f", lower/secs), hi: fmt.Sprintf("%.1f", outer.Upper/secs), exact: fmt.Sprintf("%.1f", (x2-x1)/secs),
		note: fmt.Sprintf("%s: %s; EXACT: spans in until %s ago; GOOD TOK/S: the same requests ±%s, %.0f/%.0f in flight at edges",
			target, check, v.lag, v.lag, innerEdge, outerEdge),
	}, true
}
