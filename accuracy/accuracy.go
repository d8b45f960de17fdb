// Package accuracy measures how close the live goodput series come to the
// simulator's exact ground truth: it sweeps the simulated engine from light
// load to past the knee, reads the engine's own exposition every 5 s of
// every step through the real adapter and goodput tracker, adds the
// intervals up as the daemon's counters do, and sets the result beside the
// truth.
package accuracy

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Options describe one sweep.
type Options struct {
	Base   sim.Config
	Rates  []float64
	Warmup time.Duration
	Step   time.Duration
	// Interval is the scrape cadence inside the step; 0 means 5 s, the
	// daemon's default --collect.interval.
	Interval time.Duration
	// SLOs are judged live and in truth. Their objectives must be
	// request-level (ttft, tpot, e2e, queue, error) for the joint check:
	// the truth of a per-token itl objective is not a request outcome.
	SLOs []goodput.SLO
	// Delivery, when set, sends the request spans through a courier that
	// duplicates, delays, reorders and loses them (see Delivery), and
	// Window cuts the step into windows of that length (a multiple of
	// Interval), each compared on its own (SLORow.Windows). Unset, every
	// span arrives once, in order, in the interval its request finished.
	Delivery *Delivery
	Window   time.Duration
}

// Objective compares one objective over one step.
type Objective struct {
	Kind    goodput.Kind
	OnBound bool    // the threshold is a bucket bound: the live value is exact up to windowing
	True    float64 // exact attainment from per-request truth
	Live    float64 // attainment from the histograms
	Known   bool    // both sides judged something
}

// ErrorPP is Live − True in percentage points.
func (o Objective) ErrorPP() float64 { return 100 * (o.Live - o.True) }

// SLORow is one SLO over one step.
type SLORow struct {
	SLO        string
	Objectives []Objective
	// TrueJoint is the exact share of finished requests meeting every
	// objective; Live the exported bounds.
	TrueJoint float64
	LiveJoint goodput.Bounds
	// Goodput tokens per second: the truth (output tokens of the requests
	// that finished in the window and met every objective), the exported
	// bounds, and what the former formula (each interval's generation
	// tokens times the joint attainment bounds) would have exported.
	TrueGoodput  float64
	LiveGoodput  goodput.Bounds
	NaiveGoodput goodput.Bounds
	// TokensBounded: the live token figures were bounds in every interval
	// (the engine's output-length histogram was used).
	TokensBounded bool
	// Edge is the share of the window's requests whose objectives are
	// observed on either side of the window's edge (see judge).
	Edge float64
	// RequestLevel is false when the SLO has a per-token objective (itl):
	// its joint truth (no gap over the threshold) is then not what the
	// bounds estimate, and InBand does not apply.
	RequestLevel bool
	// Exact is what the daemon judges from the engine's request spans
	// (bound="exact"), beside the truth.
	Exact ExactRow
	// Windows compare exact with the truth window by window, when the
	// spans went through a faulty delivery (Options.Delivery).
	Windows []ExactWindow
}

// InBand reports whether the true joint share lies in the live bounds,
// give or take the window's Edge share and a rounding tolerance.
func (r SLORow) InBand() bool { return r.within(r.Edge + 1e-9) }

// InBandStrict reports whether it lies in them up to rounding alone.
func (r SLORow) InBandStrict() bool { return r.within(1e-9) }

func (r SLORow) within(tol float64) bool {
	return r.TrueJoint >= r.LiveJoint.Lower-tol && r.TrueJoint <= r.LiveJoint.Upper+tol
}

// TokensInBand reports whether the true good tokens lie in the exported
// token bounds, up to rounding.
func (r SLORow) TokensInBand() bool {
	tol := 1e-9 * max(1, r.TrueGoodput)
	return r.TrueGoodput >= r.LiveGoodput.Lower-tol && r.TrueGoodput <= r.LiveGoodput.Upper+tol
}

// TokensBand says where the true good tokens fell: "yes" inside the
// bounds, "no" outside, "n/a" for a per-token SLO.
func (r SLORow) TokensBand() string {
	switch {
	case !r.RequestLevel:
		return "n/a"
	case r.TokensInBand():
		return "yes"
	}
	return "no"
}

// Band says where the truth fell: "yes" inside the bounds, "edge" outside
// them by no more than the window's edge share, "no" farther, "n/a" for a
// per-token SLO.
func (r SLORow) Band() string {
	switch {
	case !r.RequestLevel:
		return "n/a"
	case r.InBandStrict():
		return "yes"
	case r.InBand():
		return "edge"
	}
	return "no"
}

// Step is one rate of the sweep.
type Step struct {
	Rate       float64
	TTFTP99    time.Duration
	Throughput float64 // generated tok/s, all requests
	SLOs       []SLORow
	// With a faulty delivery: the copies the receiver recognised, and the
	// requests of the step that ended without a first token.
	Copies, NoFirstToken int
}

// Run sweeps and compares. Each rate runs a fresh engine (same seed):
// Warmup, then a measured window of Step scraped every Interval, then
// enough extra time for the requests in flight at the window's end to
// finish, so that the truth can be judged over the same population each
// histogram observes in the window (TTFT at the first token, ITL at each
// token, the rest at finish). The live side is what the daemon exports:
// the goodput tracker fed every scrape, its per-interval outcomes added
// up.
func Run(ctx context.Context, o Options) ([]Step, error) {
	if len(o.SLOs) == 0 || len(o.Rates) == 0 || o.Step <= 0 {
		return nil, fmt.Errorf("accuracy: need SLOs, rates and a positive step")
	}
	total := 0.0
	for _, c := range o.Base.Workload.Classes {
		if c.Sessions == 0 {
			total += c.Rate
		}
	}
	if total <= 0 {
		return nil, fmt.Errorf("accuracy: the base workload has no open-loop class")
	}
	var steps []Step
	for _, rate := range o.Rates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cfg := o.Base
		cfg.Workload.Classes = slices.Clone(cfg.Workload.Classes)
		for k := range cfg.Workload.Classes {
			cfg.Workload.Classes[k].Rate *= rate / total
		}
		st, err := runStep(cfg, rate, o)
		if err != nil {
			return nil, fmt.Errorf("rate %g: %w", rate, err)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// tail is how long past the window in-flight requests get to finish; the
// simulated clients give up after 60 s.
const tail = 5 * time.Minute

func runStep(cfg sim.Config, rate float64, o Options) (Step, error) {
	e, err := sim.New(cfg)
	if err != nil {
		return Step{}, err
	}
	scrape, err := vllmScraper(e)
	if err != nil {
		return Step{}, err
	}
	every := o.Interval
	if every <= 0 {
		every = 5 * time.Second
	}
	from := o.Warmup
	to := from + o.Step
	e.AdvanceTo(from)
	before, err := scrape()
	if err != nil {
		return Step{}, err
	}
	tr := goodput.NewTracker("sim", o.SLOs)
	if err := tr.Update(before); err != nil {
		return Step{}, err
	}
	lives := make([]live, len(o.SLOs))
	for i := range lives {
		lives[i].bounded = true
	}
	prev, after := before, before
	feed := newSpanFeed(o.SLOs, o.Delivery)
	judged := make([]float64, len(o.SLOs))
	model := ""
	for _, m := range before.Models {
		model = m.Name // the simulator serves one model
	}
	for t := from; t < to; {
		last := t
		t = min(t+every, to)
		e.AdvanceTo(t)
		if after, err = scrape(); err != nil {
			return Step{}, err
		}
		if err := tr.Update(after); err != nil {
			return Step{}, err
		}
		generated := tokens(prev, after)
		clear(judged)
		for _, m := range tr.Models() {
			for k := range m.SLOs {
				i := sloIndex(o.SLOs, m.SLOs[k].SLO)
				lives[i].add(&m.SLOs[k], generated)
				if in := m.SLOs[k].Joint.Interval; in.OK {
					judged[i] += in.Requests
				}
			}
		}
		feed.send(e, model, last, t, judged)
		prev = after
	}
	e.AdvanceTo(to + tail)
	recs := e.Truth().Records(0, to+tail)
	st := Step{Rate: rate, TTFTP99: ttftP99(recs, from, to), Throughput: tokens(before, after) / o.Step.Seconds()}
	if feed.err != nil {
		return Step{}, fmt.Errorf("request spans: %w", feed.err)
	}
	if feed.courier != nil {
		st.Copies, st.NoFirstToken = int(feed.recv.Spans(otlp.ResultDuplicate)), feed.courier.aborted
	}
	for k, slo := range o.SLOs {
		truth := judge(slo, recs, from, to)
		row := compare(slo, &lives[k], after, truth, o.Step.Seconds())
		row.Exact = feed.row(slo, model, truth)
		if o.Window > 0 {
			row.Windows = feed.windows(k, slo, recs, from, every, int(o.Window/every))
		}
		st.SLOs = append(st.SLOs, row)
	}
	return st, nil
}

// live adds up one SLO's per-interval outcomes over a step, as the
// daemon's counters do.
type live struct {
	state *goodput.SLOState // the latest; its objectives' totals cover the step
	// Sums over the intervals: good token bounds, and the former token
	// formula.
	goodTok  goodput.Bounds
	naiveTok goodput.Bounds
	bounded  bool // every interval with an outcome had token bounds
}

func (l *live) add(s *goodput.SLOState, generated float64) {
	l.state = s
	in := &s.Joint.Interval
	if !in.OK {
		return
	}
	l.goodTok.Lower += in.Good.Tokens.Lower
	l.goodTok.Upper += in.Good.Tokens.Upper
	n := in.Attainment.Scale(generated)
	l.naiveTok.Lower += n.Lower
	l.naiveTok.Upper += n.Upper
	l.bounded = l.bounded && in.TokensBounded
}

func sloIndex(slos []goodput.SLO, name string) int {
	for i := range slos {
		if slos[i].Name == name {
			return i
		}
	}
	return -1
}

func tokens(a, b *snapshot.Snapshot) float64 {
	sum := 0.0
	for _, m := range b.Models {
		if p := a.Model(m.Name); p != nil {
			sum += m.Counters[snapshot.GenerationTokens].V - p.Counters[snapshot.GenerationTokens].V
		}
	}
	return sum
}

func ttftP99(recs []sim.Record, from, to time.Duration) time.Duration {
	var xs []time.Duration
	for i := range recs {
		r := &recs[i]
		if r.HasFirstToken && r.FirstToken >= from && r.FirstToken < to {
			xs = append(xs, r.FirstToken-r.Arrival)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[min(len(xs)-1, int(math.Ceil(0.99*float64(len(xs))))-1)]
}

// compare lines up the live outcome of one SLO over a step with its truth.
func compare(slo goodput.SLO, l *live, end *snapshot.Snapshot, truth truthSLO, seconds float64) SLORow {
	row := SLORow{SLO: slo.Name, Edge: truth.edge, RequestLevel: true}
	for _, o := range slo.Objectives {
		row.RequestLevel = row.RequestLevel && o.Kind != goodput.KindITL
	}
	if truth.requests > 0 {
		row.TrueJoint = truth.goodRequests / truth.requests
	}
	row.TrueGoodput = truth.goodTokens / seconds
	if l.state == nil {
		return row
	}
	var m *snapshot.Model
	for i := range end.Models {
		m = &end.Models[i] // the simulator serves one model
	}
	for j, obj := range slo.Objectives {
		lo := &l.state.Objectives[j]
		ta := truth.objectives[j]
		p, has := lo.Total.Attainment()
		c := Objective{Kind: obj.Kind, Live: p, Known: has && ta.judged > 0}
		if ta.judged > 0 {
			c.True = ta.good / ta.judged
		}
		c.OnBound = obj.Kind == goodput.KindError
		if m != nil && lo.Resolution.Supported && obj.Kind.Latency() {
			c.OnBound = goodput.IsBound(m.Hists[lo.Resolution.Hist].Bounds, obj.Threshold)
		}
		row.Objectives = append(row.Objectives, c)
	}
	// The request bounds over the step are drawn from the step's totals
	// (the tracker started at the step's start), as the recording rules
	// draw them over a window: never a sum of per-interval bounds.
	if w := l.state.Joint.Window; w.Requests > 0 {
		b := goodput.WindowBounds(goodput.WindowTotals{Good: make([]float64, len(w.Good))}, w)
		row.LiveJoint = b.Scale(1 / w.Requests)
	}
	row.LiveGoodput = goodput.Bounds{Lower: l.goodTok.Lower / seconds, Upper: l.goodTok.Upper / seconds}
	row.NaiveGoodput = goodput.Bounds{Lower: l.naiveTok.Lower / seconds, Upper: l.naiveTok.Upper / seconds}
	row.TokensBounded = l.bounded
	return row
}

// vllmScraper reads the engine's vLLM exposition through the real adapter,
// as the daemon's scrape would, stamped with the simulator's clock. A
// family error is an error: the simulator must speak the engine's format.
func vllmScraper(e *sim.Engine) (func() (*snapshot.Snapshot, error), error) {
	parser, err := collector.NewParser(snapshot.VLLM, collector.ParseOptions{ModelLimit: 100})
	if err != nil {
		return nil, err
	}
	return func() (*snapshot.Snapshot, error) {
		var buf bytes.Buffer
		if err := e.WriteMetrics(&buf, sim.FormatVLLM); err != nil {
			return nil, err
		}
		s, err := parser.Parse(buf.Bytes(), "", time.Unix(0, 0).Add(e.Now()))
		if err != nil {
			return nil, fmt.Errorf("the adapter rejected the simulator's exposition: %w", err)
		}
		if len(s.Errors) > 0 {
			return nil, fmt.Errorf("family errors in the simulator's exposition: %v", s.Errors)
		}
		s.Target = "sim"
		return s, nil
	}, nil
}
