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
	if out := &tr.hists[snapshot.OutputTokens]; j.RequestsSource != "" && m.Hists[snapshot.OutputTokens] != nil && !out.unstable {
		// The layout is known from the first snapshot that has the
		// histogram, a baseline included: its counters then exist from
		// the start, as the judged requests' do, and a window over their
		// first samples is not short of the requests it judged.
		j.Window.Output.noteLayout(out.bounds)
	}
	// With no objective judging anything there is no outcome at all. An
	// objective whose data glitched this interval is unknown, not empty:
	// then nothing is judged. Otherwise the interval's counts go to the
	// window totals, which alone bound windows (Total.Requests).
	if !supported || skipped || f.k == 0 {
		return
	}
	in := &j.Interval
	// One interval is a short window in which the requests in flight at
	// its edges weigh most: its view (and the token bounds drawn from it)
	// takes the Fréchet bounds of the objectives' shares, each widened by
	// its interpolated requests. Windows are bounded from the totals.
	var lo, hi frechet
	for i := range s.Objectives {
		o := &s.Objectives[i]
		c := o.Interval
		switch {
		case c.Judged > 0:
			lo.add((c.Good - c.Interpolated) / c.Judged)
			hi.add((c.Good + c.Interpolated) / c.Judged)
		case o.TokenInterval.Judged > 0:
			// tpot judged per token enters as the range it proves (as in
			// the first pass above).
			lo.add(perTokenFloor(o.TokenInterval, tr.requests(requestSource(m))))
			hi.add(1)
		}
	}
	b := Bounds{Lower: lo.bounds().Lower, Upper: hi.bounds().Upper}
	b.Lower = min(b.Lower, b.Upper)
	in.OK, in.Attainment = true, b
	if j.RequestsSource != "" {
		in.Requests = tr.requests(j.RequestsSource)
		win := s.window(in.Requests)
		in.Good.Requests = b.Scale(in.Requests)
		j.Window.add(win)
		// The output lengths of the same requests, over the same
		// intervals: what bounds their tokens over a window.
		out := &tr.hists[snapshot.OutputTokens]
		j.Window.Output.addOutput(in.Requests, m.Hists[snapshot.OutputTokens] != nil && out.ok && !out.skip,
			out.bounds, out.dcum, out.dcount, out.dsum)
		lower := j.Window.Requests - j.Window.Failed - unjudged(j.Window)
		upper := j.Window.Requests
		for _, g := range j.Window.Good {
			upper = min(upper, g)
		}
		// Both never decrease: Requests and Good only grow, and lower is
		// the highest lower bound reached so far, held at most at upper
		// (it can pass it by the requests TTFT judged before the tracker
		// started, or has not judged yet). The increase of either
		// between two readings bounds the window between them (see
		// Joint.Total).
		j.lowest = max(j.lowest, lower)
		j.Total.Requests.Upper = max(j.Total.Requests.Upper, upper)
		j.Total.Requests.Lower = max(j.Total.Requests.Lower, min(j.lowest, j.Total.Requests.Upper))
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
	j.Total.Tokens.add(in.Good.Tokens)
}

// window returns the last interval's counts for the window bounds, with
// requests finished in it. An objective that judged nothing had no
// request to fail and none to pass; a per-token objective enters as its
// share of the requests (an estimate: a share of tokens does not say which
// requests failed), and when it judged nothing as passing all of them.
func (s *SLOState) window(requests float64) WindowTotals {
	w := WindowTotals{Requests: requests, Good: make([]float64, len(s.Objectives)), Judged: make([]float64, len(s.Objectives))}
	for k := range s.Objectives {
		o := &s.Objectives[k]
		c := o.Interval
		if o.Resolution.Fallback {
			// tpot judged per token: every request failing tpot has a
			// token failing it, so at most the failing tokens failed (and
			// at most every request); all may have passed.
			failing := 0.0
			if t := o.TokenInterval; t.Judged > 0 {
				failing = max(t.Judged-t.Good+t.Interpolated, 0)
			}
			w.Failed += min(requests, failing)
			w.Good[k], w.Judged[k] = requests, requests
			continue
		}
		if o.perToken() {
			lo, hi := 1.0, 1.0
			if c.Judged > 0 {
				lo = clamp01((c.Good - c.Interpolated) / c.Judged)
				hi = clamp01((c.Good + c.Interpolated) / c.Judged)
			}
			w.Failed += requests * (1 - lo)
			w.Good[k], w.Judged[k] = requests*hi, requests
			continue
		}
		w.Failed += c.Judged - c.Good + c.Interpolated
		w.Good[k], w.Judged[k] = min(c.Good+c.Interpolated, c.Judged), c.Judged
	}
	return w
}

// perToken reports whether the objective judges tokens, not requests.
func (o *ObjectiveState) perToken() bool {
	return o.Resolution.Supported && o.Objective.Kind != KindError && o.Resolution.Hist == snapshot.ITL
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

// unjudged is, summed over objectives, the finished requests an objective
// did not judge, where positive.
func unjudged(w WindowTotals) float64 {
	n := 0.0
	for _, j := range w.Judged {
		n += max(0, w.Requests-j)
	}
	return n
}
