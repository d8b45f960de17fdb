package goodput

import (
	"errors"
	"fmt"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Cost is the hourly price of a target (see HourlyCost), for the report.
type Cost struct {
	Hourly   float64
	Currency string
}

// Report is the SLO outcome of one target over the window between two of
// its snapshots, as `slo-report` prints it.
type Report struct {
	Target string
	Engine snapshot.Engine
	Window time.Duration
	// Restarted is set when the later snapshot says the engine restarted
	// within the window: its counts then cover only the time since.
	Restarted bool
	Cost      *Cost // nil when no price was given
	// Rows are one per model and SLO, models sorted by name, SLOs in
	// configuration order; only models listed in the later snapshot.
	Rows []ReportRow
	// Unmatched lists the models no SLO applies to.
	Unmatched []string
}

// ReportRow is one SLO on one model over the window.
type ReportRow struct {
	Model, SLO string
	Objectives []ReportObjective
	Joint      ReportJoint
}

// ReportObjective is one objective over the window.
type ReportObjective struct {
	Objective  Objective
	Resolution Resolution
	Counts     Counts
	// Attainment is Counts.Good/Counts.Judged; HasAttainment is false when
	// the objective is unsupported or judged nothing.
	Attainment    float64
	HasAttainment bool
	// Met is Attainment >= Objective.Target.
	Met bool
}

// ReportJoint is the goodput of one SLO over the window.
type ReportJoint struct {
	// Supported mirrors Joint.Supported: false when any objective is
	// unsupported, and then nothing below is computed.
	Supported bool
	// Computed is false when no objective judged anything in the window.
	Computed       bool
	Attainment     Bounds
	RequestsSource string  // see Joint.RequestsSource
	Requests       float64 // finished in the window
	// Tokens are those of the requests that finished in the window when
	// TokensBounded, else those generated in it.
	Tokens    float64
	HasTokens bool
	// TokensBounded: the good tokens (and the cost per good token) are
	// true bounds from the output-length histogram; otherwise an estimate
	// (see Joint.TokensBounded).
	TokensBounded bool
	// Lower and Upper are the goodput at each attainment bound.
	Lower, Upper GoodRates
}

// GoodRates is goodput over a window at one bound.
type GoodRates struct {
	RequestsPerSecond float64
	TokensPerSecond   float64
	// CostPerMillionTokens is the cost of a million good tokens at this
	// goodput (so the lower goodput gives the higher cost); HasCost is
	// false without a price or without good tokens.
	CostPerMillionTokens float64
	HasCost              bool
}

// BuildReport judges the window between prev and cur, two snapshots of one
// target taken cur.Time − prev.Time apart. prev is a baseline whatever its
// Restarted flag says; cur.Restarted means its counts are the window's.
// cost may be nil.
func BuildReport(prev, cur *snapshot.Snapshot, slos []SLO, cost *Cost) (*Report, error) {
	if prev == nil || cur == nil {
		return nil, errors.New("two snapshots are needed")
	}
	window := cur.Time.Sub(prev.Time)
	if window <= 0 {
		return nil, fmt.Errorf("the second snapshot must be later than the first, got a window of %v", window)
	}
	if cur.Baseline {
		return nil, errors.New("the second capture comes from another engine process than the first, whose counts are of unknown age: take both from the same process")
	}
	base := *prev
	base.Restarted, base.Baseline = false, false
	tr := NewTracker(cur.Target, slos)
	for _, s := range []*snapshot.Snapshot{&base, cur} {
		if err := tr.Update(s); err != nil {
			return nil, err
		}
	}
	r := &Report{Target: cur.Target, Engine: cur.Engine, Window: window, Restarted: cur.Restarted, Cost: cost}
	for _, m := range tr.Models() {
		switch {
		case !m.Present:
		case len(m.SLOs) == 0:
			r.Unmatched = append(r.Unmatched, m.Model)
		default:
			for _, s := range m.SLOs {
				r.Rows = append(r.Rows, reportRow(m.Model, &s, window.Seconds(), cost))
			}
		}
	}
	return r, nil
}

func reportRow(model string, s *SLOState, seconds float64, cost *Cost) ReportRow {
	row := ReportRow{Model: model, SLO: s.SLO}
	for _, o := range s.Objectives {
		c := o.Interval
		if o.Resolution.Fallback {
			c = o.TokenInterval // tokens, as the text says (per token)
		}
		ro := ReportObjective{Objective: o.Objective, Resolution: o.Resolution, Counts: c}
		ro.Attainment, ro.HasAttainment = c.Attainment()
		ro.Met = ro.HasAttainment && ro.Attainment >= o.Objective.Target
		row.Objectives = append(row.Objectives, ro)
	}
	j, in := s.Joint, s.Joint.Interval
	row.Joint = ReportJoint{
		Supported:      j.Supported,
		Computed:       in.OK,
		Attainment:     in.Attainment,
		RequestsSource: j.RequestsSource,
		Requests:       in.Requests,
		Tokens:         in.Tokens,
		HasTokens:      j.TokensSupported,
		TokensBounded:  in.TokensBounded,
	}
	rates := func(reqs, toks float64) GoodRates {
		g := GoodRates{RequestsPerSecond: reqs / seconds, TokensPerSecond: toks / seconds}
		if cost != nil && j.TokensSupported {
			g.CostPerMillionTokens, g.HasCost = CostPerMillionGoodTokens(cost.Hourly, g.TokensPerSecond)
		}
		return g
	}
	if in.OK {
		tok := in.Good.Tokens
		// Bounded tokens are drawn from the window's totals, as the
		// recording rules draw them (WindowTokenBounds): the report's
		// tracker judged one interval, the window.
		if in.TokensBounded {
			if tb, ok := WindowTokenBounds(WindowTotals{}, j.Window, 0); ok {
				tok = tb
			}
		}
		row.Joint.Lower = rates(in.Good.Requests.Lower, tok.Lower)
		row.Joint.Upper = rates(in.Good.Requests.Upper, tok.Upper)
	}
	return row
}
