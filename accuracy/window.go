package accuracy

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// ExactWindow sets what the exact counters rose by over one window of
// scrapes beside the truth of the requests that finished in it, and the
// delivery log of the spans that crossed its edges.
type ExactWindow struct {
	From, To time.Duration
	// Truth: requests that finished in the window, those that met every
	// objective, and their generation tokens.
	Truth exactCount
	// Exact: the increase of the exact counters over the window.
	Exact exactCount
	// Out: requests that finished in the window whose span arrived after
	// it; Lost: those whose span never arrived; In: requests that finished
	// earlier whose span arrived in it. Each judged by the truth.
	Out, Lost, In exactCount
	// Judged is the requests the histograms judged in the window: what
	// the daemon can set beside the traced count (Exact.requests).
	Judged float64
}

// Complete reports whether every span of the window's requests arrived in
// it, and none of another window's.
func (w ExactWindow) Complete() bool {
	return w.Out.requests == 0 && w.Lost.requests == 0 && w.In.requests == 0
}

// Explained reports whether exact = truth − out − lost + in, to the request
// and the token: every difference is a span that crossed the window's edge
// or never came, none is a copy counted twice or a span misjudged.
func (w ExactWindow) Explained() bool {
	eq := func(got, truth, out, lost, in float64) bool {
		return math.Abs(got-(truth-out-lost+in)) < 1e-6
	}
	return eq(w.Exact.requests, w.Truth.requests, w.Out.requests, w.Lost.requests, w.In.requests) &&
		eq(w.Exact.good, w.Truth.good, w.Out.good, w.Lost.good, w.In.good) &&
		eq(w.Exact.tokens, w.Truth.tokens, w.Out.tokens, w.Lost.tokens, w.In.tokens)
}

// windows cuts the step into windows of per intervals (each every long,
// the first starting at from) and compares each for one SLO.
func (f *spanFeed) windows(k int, slo goodput.SLO, recs []sim.Record, from, every time.Duration, per int) []ExactWindow {
	if f.courier == nil || per <= 0 {
		return nil
	}
	all := func(sub []sim.Record) exactCount {
		t := judge(slo, sub, math.MinInt64, math.MaxInt64)
		return exactCount{t.requests, t.goodRequests, t.goodTokens}
	}
	var out []ExactWindow
	for p := 0; p+per < len(f.cum); p += per {
		q := p + per
		a, b := from+time.Duration(p)*every, from+time.Duration(q)*every
		t := judge(slo, recs, a, b)
		w := ExactWindow{From: a, To: b, Truth: exactCount{t.requests, t.goodRequests, t.goodTokens},
			Judged: f.judged[q][k] - f.judged[p][k]}
		w.Exact = exactCount{f.cum[q][k].requests - f.cum[p][k].requests, f.cum[q][k].good - f.cum[p][k].good, f.cum[q][k].tokens - f.cum[p][k].tokens}
		var outs, lost, ins []sim.Record
		for _, r := range recs {
			at, sent := f.courier.first[r.ID]
			switch {
			case !sent:
			case r.Finish >= a && r.Finish < b && at < 0:
				lost = append(lost, r)
			case r.Finish >= a && r.Finish < b && at > q:
				outs = append(outs, r)
			case r.Finish < a && at > p && at <= q:
				ins = append(ins, r)
			}
		}
		w.Out, w.Lost, w.In = all(outs), all(lost), all(ins)
		out = append(out, w)
	}
	return out
}

// WriteDeliveryTable prints the windows of every step and SLO: truth, exact,
// the spans that crossed the edges, and the histograms' judged count.
func WriteDeliveryTable(w io.Writer, steps []Step) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RATE\tSLO\tWINDOW\tREQUESTS true/exact\tGOOD true/exact\tGOOD TOKENS true/exact\tLATE OUT\tLOST\tLATE IN\tJUDGED (histograms)\tCOMPLETE\tEXPLAINED")
	for _, s := range steps {
		for _, r := range s.SLOs {
			for _, x := range r.Windows {
				fmt.Fprintf(tw, "%g\t%s\t%v–%v\t%.0f/%.0f\t%.0f/%.0f\t%.0f/%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t%s\n",
					s.Rate, r.SLO, x.From, x.To, x.Truth.requests, x.Exact.requests, x.Truth.good, x.Exact.good, x.Truth.tokens, x.Exact.tokens,
					x.Out.requests, x.Lost.requests, x.In.requests, x.Judged, yesNo(x.Complete()), yesNo(x.Explained()))
			}
		}
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
