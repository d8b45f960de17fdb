package accuracy

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// ExactRow is what the daemon judges exactly from the simulated engine's
// request spans over one window, beside the truth.
type ExactRow struct {
	// Supported is false for an SLO a request span cannot judge (itl).
	Supported bool
	// Requests finished in the window, those that met every objective, and
	// their generation tokens, from the spans.
	Requests, GoodRequests, GoodTokens float64
	// The same from the simulator's per-request truth.
	TrueRequests, TrueGoodRequests, TrueGoodTokens float64
}

// Equal reports whether the exact figures are the truth's.
func (r ExactRow) Equal() bool {
	return r.Requests == r.TrueRequests && r.GoodRequests == r.TrueGoodRequests && r.GoodTokens == r.TrueGoodTokens
}

// spanFeed sends the spans of the requests that finished in each scrape
// interval through the OTLP receiver, wire encoding included, into an
// exact judge, as an engine exporting its spans to the daemon would:
// once, in order and on time, or through a courier that duplicates,
// delays, reorders and loses them.
type spanFeed struct {
	recv    *otlp.Receiver
	exact   *goodput.Exact
	slos    []goodput.SLO
	courier *courier // nil: every span once, on time
	err     error
	// After each interval i (from 1), cumulative per SLO: exact counts
	// (cum[i]) and the requests the histograms judged (judged[i]).
	cum    [][]exactCount
	judged [][]float64
}

// exactCount is what the exact judge has counted for one SLO.
type exactCount struct{ requests, good, tokens float64 }

func newSpanFeed(slos []goodput.SLO, d *Delivery) *spanFeed {
	f := &spanFeed{exact: goodput.NewExact("sim", slos, 0), slos: slos}
	if d != nil {
		f.courier = newCourier(*d)
	}
	f.recv = otlp.New(otlp.Options{Sink: f})
	f.cum = [][]exactCount{make([]exactCount, len(slos))}
	f.judged = [][]float64{make([]float64, len(slos))}
	return f
}

func (f *spanFeed) Match(*otlp.Resource) (otlp.Dest, string) { return f, "" }

func (f *spanFeed) Fold(reqs []goodput.TracedRequest, drop func(string)) {
	for i := range reqs {
		if !f.exact.Fold(&reqs[i]) {
			drop(otlp.ResultNoModel)
		}
	}
}

// send hands over the spans of the records that finished in [from, to),
// the interval's, and delivers what arrives in it; then it notes the
// exact judge's counts and the histograms' judged requests (judged, per
// SLO, this interval).
func (f *spanFeed) send(e *sim.Engine, model string, from, to time.Duration, judged []float64) {
	recs := e.Truth().Records(from, to)
	i := len(f.cum)
	if f.courier == nil {
		f.export(recs, model, 0)
	} else {
		f.courier.take(i, recs)
		for _, ex := range f.courier.deliver(i) {
			f.export(ex, model, f.courier.skew())
		}
	}
	cum := make([]exactCount, len(f.slos))
	jud := slices.Clone(f.judged[i-1])
	for k, slo := range f.slos {
		jud[k] += judged[k]
		if m := f.exact.Model(model); m != nil {
			for _, s := range m.SLOs {
				if s.SLO == slo.Name {
					cum[k] = exactCount{s.Exact.Requests, s.Exact.GoodRequests, s.Exact.GoodTokens}
				}
			}
		}
	}
	f.cum = append(f.cum, cum)
	f.judged = append(f.judged, jud)
}

// spanEpoch is the wall time of the simulation's start in its spans: a
// fixed past date (the receiver refuses spans before 2000 or more than a
// day ahead of its clock; nothing else reads their times).
var spanEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// export sends records as one export, its timestamps shifted by skew.
func (f *spanFeed) export(recs []sim.Record, model string, skew time.Duration) {
	if len(recs) == 0 || f.err != nil {
		return
	}
	req := ptraceotlp.NewExportRequestFromTraces(sim.Spans(recs, sim.SpanOptions{Service: "sim", Model: model, Epoch: spanEpoch.Add(skew)}))
	body, err := req.MarshalProto()
	if err != nil {
		f.err = err
		return
	}
	got := ptraceotlp.NewExportRequest()
	if err := got.UnmarshalProto(body); err != nil {
		f.err = err
		return
	}
	if out := f.recv.Consume(netip.Addr{}, got.Traces()); out.Dropped > 0 || out.Folded+out.Duplicate != len(recs) {
		f.err = fmt.Errorf("spans of %d requests: %d folded, %d copies, %d dropped (%s)", len(recs), out.Folded, out.Duplicate, out.Dropped, out.First)
	}
}

// row returns the exact outcome of an SLO next to its truth.
func (f *spanFeed) row(slo goodput.SLO, model string, truth truthSLO) ExactRow {
	row := ExactRow{TrueRequests: truth.requests, TrueGoodRequests: truth.goodRequests, TrueGoodTokens: truth.goodTokens}
	m := f.exact.Model(model)
	if m == nil {
		row.Supported = true
		for _, o := range slo.Objectives {
			row.Supported = row.Supported && o.Kind != goodput.KindITL
		}
		return row
	}
	for _, s := range m.SLOs {
		if s.SLO != slo.Name {
			continue
		}
		row.Supported = s.Supported
		row.Requests, row.GoodRequests, row.GoodTokens = s.Exact.Requests, s.Exact.GoodRequests, s.Exact.GoodTokens
	}
	return row
}

// WriteExactTable prints, per step and SLO, the requests that finished in
// the window and those meeting every objective, as the truth has them and
// as the daemon judges them from the spans (bound="exact"), with the
// histogram bounds beside them for comparison.
func WriteExactTable(w io.Writer, steps []Step) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RATE\tSLO\tREQUESTS true/exact\tGOOD REQUESTS true/exact\tGOOD TOKENS true/exact\tEXACT = TRUTH\tTRUE JOINT\tEXACT JOINT\tLIVE JOINT (bounds)")
	for _, s := range steps {
		for _, r := range s.SLOs {
			x := r.Exact
			if !x.Supported {
				fmt.Fprintf(tw, "%g\t%s\tn/a\tn/a\tn/a\tn/a (per-token objective)\t%.4f\tn/a\t%.4f..%.4f\n", s.Rate, r.SLO, r.TrueJoint, r.LiveJoint.Lower, r.LiveJoint.Upper)
				continue
			}
			eq := "yes"
			if !x.Equal() {
				eq = "no"
			}
			joint := 0.0
			if x.Requests > 0 {
				joint = x.GoodRequests / x.Requests
			}
			fmt.Fprintf(tw, "%g\t%s\t%.0f/%.0f\t%.0f/%.0f\t%.0f/%.0f\t%s\t%.4f\t%.4f\t%.4f..%.4f\n",
				s.Rate, r.SLO, x.TrueRequests, x.Requests, x.TrueGoodRequests, x.GoodRequests, x.TrueGoodTokens, x.GoodTokens,
				eq, r.TrueJoint, joint, r.LiveJoint.Lower, r.LiveJoint.Upper)
		}
	}
	return tw.Flush()
}
