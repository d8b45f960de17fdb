package goodput

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// observe judges the last interval of model m against one SLO and adds it
// to the totals.
func (s *SLOState) observe(m *snapshot.Model, tr *modelTrack) {
	supported, skipped := true, false
	var f frechet
	for i := range s.Objectives {
		o := &s.Objectives[i]
		o.observe(m, tr)
		supported = supported && o.Resolution.Supported
		skipped = skipped || o.Skipped
		if p, ok := o.Interval.Attainment(); ok {
			f.add(p)
		} else if o.TokenInterval.Judged > 0 {
			// tpot judged per token: not a share of requests. Requests
			// failing tpot (a mean gap over the threshold) each have a
			// gap over it, so they are at most the failing tokens: the
			// share of requests meeting it is at least 1 − failing
			// tokens / requests, and at most 1.
			f.addRange(perTokenFloor(o.TokenInterval, tr.requests(requestSource(m))), 1)
		}
	}
	j := &s.Joint
	j.Supported = supported
	j.RequestsSource = requestSource(m)
	j.TokensSupported = m.Counters[snapshot.GenerationTokens].OK || m.Hists[snapshot.OutputTokens] != nil
	j.TokensBounded = m.Hists[snapshot.OutputTokens] != nil && s.perRequest()
	j.Interval = JointInterval{}
	// An objective that judged nothing this interval had nothing to fail,
	// so it is left out of the bounds (the same as p = 1). With none
	// judging anything there is no outcome at all. An objective whose data
	// glitched this interval is unknown, not empty: then nothing is judged.
	if !supported || skipped || f.k == 0 {
		return
	}
	b := f.bounds()
	in := &j.Interval
	in.OK, in.Attainment = true, b
	if j.RequestsSource != "" {
		in.Requests = tr.requests(j.RequestsSource)
		in.Good.Requests = b.Scale(in.Requests)
	}
	out := &tr.hists[snapshot.OutputTokens]
	if j.TokensBounded && out.ok {
		in.Good.Tokens, in.TokensBounded = TokenBounds(out.bounds, out.dcum, out.dcount, out.dsum, b)
		if in.TokensBounded {
			in.Tokens = out.dsum
		}
	}
	if !in.TokensBounded && tr.tokens.ok {
		in.Tokens = tr.tokens.delta
		in.Good.Tokens = b.Scale(in.Tokens)
	}
	j.Total.Requests.add(in.Good.Requests)
	j.Total.Tokens.add(in.Good.Tokens)
}

// observe judges the last interval of model m against one objective.
func (o *ObjectiveState) observe(m *snapshot.Model, tr *modelTrack) {
	o.Resolution = Resolve(m, o.Objective.Kind)
	o.Interval, o.TokenInterval, o.Skipped = Counts{}, Counts{}, false
	if !o.Resolution.Supported {
		return
	}
	if o.Objective.Kind != KindError && tr.hists[o.Resolution.Hist].unstable {
		o.Resolution.Supported, o.Resolution.Unstable = false, true
		return
	}
	var c Counts
	if o.Objective.Kind == KindError {
		f := &tr.finished
		o.Skipped = f.skip
		if !f.ok || f.skip {
			return
		}
		failed := f.errors
		if o.Objective.IncludeAbort {
			failed += f.aborts
		}
		c = Counts{Judged: f.total, Good: max(f.total-failed, 0), Aborted: f.aborts}
	} else {
		h := &tr.hists[o.Resolution.Hist]
		o.Skipped = h.skip
		if !h.ok || h.skip {
			return
		}
		c.Judged = h.dcount
		c.Good, c.Interpolated = GoodAt(h.bounds, h.dcum, h.dcount, o.Objective.Threshold)
		c = withinJudged(c)
	}
	if !(c.Judged > 0) {
		return
	}
	if o.Resolution.Fallback {
		o.TokenInterval = c
		o.Tokens.add(c)
		return
	}
	o.Interval = c
	o.Total.add(c)
}

// perTokenFloor is the least share of the interval's requests that can
// have met a per-request latency objective judged per token: each
// failing request has at least one failing token, and the failing tokens
// are at most the judged ones not counted good plus those of the bucket
// that straddles the threshold. 0 when the requests are unknown.
func perTokenFloor(c Counts, requests float64) float64 {
	if !(requests > 0) {
		return 0
	}
	failing := max(c.Judged-c.Good+c.Interpolated, 0)
	return max(1-failing/requests, 0)
}

// perRequest reports whether every objective judges requests: a share of
// tokens (itl, or tpot judged per token) says nothing about which requests
// failed, so token bounds cannot be drawn from it.
func (s *SLOState) perRequest() bool {
	for i := range s.Objectives {
		r := &s.Objectives[i].Resolution
		if r.Supported && s.Objectives[i].Objective.Kind != KindError && r.Hist == snapshot.ITL {
			return false
		}
	}
	return true
}

// withinJudged keeps an interval's good and interpolated requests within
// its judged ones. Interpolating inside a bucket can land an ulp above
// the count, and an engine whose bucket counts grew more than its _count
// in an interval (a scrape between two updates of one histogram) would
// otherwise give more good requests than judged: an attainment above 1,
// a negative burn rate downstream.
func withinJudged(c Counts) Counts {
	c.Good = min(max(c.Good, 0), c.Judged)
	c.Interpolated = min(max(c.Interpolated, 0), c.Judged)
	return c
}
