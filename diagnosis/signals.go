package diagnosis

import (
	"math"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Signals are what the rules judge, over one span of history. A signal
// the engine or GPU backend does not expose, or that had nothing to
// measure (no request finished), is absent.
type Signals struct {
	// Span is the history covered; Cycles the samples in it.
	Span   time.Duration
	Cycles int
	// UpShare is the share of scrapes that succeeded; DownFor how long,
	// in seconds up to the latest scrape, none has (0 when the latest
	// succeeded; the whole span when none did).
	UpShare, DownFor Value
	// Waiting and Running are means; WaitingSlope the least-squares
	// growth of the queue in requests per second; RunningCeiling the
	// largest running batch seen in the baseline and the window, the
	// batch ceiling as far as it can be observed.
	Waiting, WaitingSlope, Running, RunningCeiling Value
	// WaitingRecent is the mean queue over the last quarter of the span
	// (at least two samples): the queue now, which the mean over a
	// window understates while it grows.
	WaitingRecent Value
	// KVUsage is the mean KV-cache usage (the fullest model's).
	KVUsage Value
	// KVPerRunning is the median over the samples of KV usage over the
	// running batch: the share of the cache one running request holds.
	// A median, so that the onset of an incident, which a baseline lagged
	// by one window soon contains, does not move the baseline's.
	KVPerRunning Value
	// PreemptionsPerSecond over the span.
	PreemptionsPerSecond Value
	// TTFTTail is the TTFT at the TTFT target's quantile (P99 by
	// default); QueueShareOfTTFT is mean queue time / mean TTFT.
	TTFTTail, QueueShareOfTTFT Value
	// DecodeTail is the TPOT (or, without a per-request histogram, the
	// inter-token latency) at the decode target's quantile; DecodeMean
	// the mean inter-token latency (TPOT where there is no ITL).
	DecodeTail, DecodeMean Value
	// TTFTAttainment and DecodeAttainment are the shares meeting the
	// TTFT and decode objectives; DecodePerToken is set when the engine
	// has no per-request TPOT histogram, DecodeAttainment is then absent
	// and the rule judges DecodeMean.
	TTFTAttainment, DecodeAttainment Value
	DecodePerToken                   bool
	// Prompt tokens per second and per request (requests counted at
	// their first token, as their prompts are; on an engine that counts
	// prompts as requests finish, at their finish).
	PromptTokensPerSecond, PromptTokensPerRequest Value
	// PrefixHitRatio is hits/queries over the span (tokens), else the
	// mean of the engine's hit-ratio gauge.
	PrefixHitRatio Value
	// GenerationTokensPerSecond over the span.
	GenerationTokensPerSecond Value
	// TimePerOutputTokenMean and TimePerPromptTokenMean are estimates
	// from the engine's own timing of its phases (snapshot.Timing, which
	// llama.cpp reports as requests complete): seconds spent generating
	// over the tokens generated, seconds spent on prompts over the
	// prompt tokens computed, over the requests that completed in the
	// span. Absent where the engine does not time its phases or no
	// timed token was counted. Evidence only: no rule or objective
	// judges them.
	TimePerOutputTokenMean, TimePerPromptTokenMean Value
	// EngineStepsPerSecond: forward passes over the span, where the engine
	// counts them (llama.cpp, TGI, Triton). It shows progress on engines
	// that count generated tokens only when a request completes.
	EngineStepsPerSecond Value
	// StreamedTokensPerSecond: first and next tokens the engine observed
	// in its TTFT and inter-token histograms over the span, which it
	// records as each token streams. An engine that adds its generated
	// tokens to the counter only when a request completes
	// (llm-d-inference-sim) shows its progress here between completions.
	StreamedTokensPerSecond Value
	// Silent is how long, in seconds up to the latest sample, the engine
	// generated no token while requests were in flight (0 when the
	// latest interval had tokens or nothing was in flight; absent
	// without a generation-token counter). A failed scrape neither
	// breaks nor extends it: the next good one covers its interval.
	Silent Value
	// RequestsPerSecond is the rate of requests served: those that got
	// their first token (the TTFT histogram's count), else those that
	// finished; absent where the engine counts neither (llama.cpp).
	RequestsPerSecond Value
	// FinishedPerSecond, and the shares that ended in error and abort.
	FinishedPerSecond, ErrorRatio, AbortRatio Value
	// GPU: the lowest SM clock ratio (mean), summed power (mean), the
	// share of readings with a slowdown reason, and the reasons seen.
	GPUClockRatio, GPUPowerW, GPUThrottledShare Value
	GPUThrottleReasons                          uint64
	// GPUClockExplainedShare is the share of clock readings whose slowest
	// GPU gave a reason for its clock that is no fault: idle, or at its
	// default power limit.
	GPUClockExplainedShare Value
}

// Objectives are the latency objectives the decode_saturation rule
// judges: from the target's SLOs where they have them.
type Objectives struct {
	DecodeLatency, DecodeTarget float64
	TTFTLatency, TTFTTarget     float64
}

// ObjectivesFor picks the tightest tpot (else itl) and ttft objectives
// among the SLOs that apply to target, falling back to the thresholds.
func ObjectivesFor(target string, slos []goodput.SLO, th Thresholds) Objectives {
	o := Objectives{th.DecodeLatency, th.DecodeTarget, th.TTFTLatency, th.TTFTTarget}
	var dec, ttft bool
	for _, s := range slos {
		if len(s.Match.Targets) > 0 && !contains(s.Match.Targets, target) {
			continue
		}
		for _, ob := range s.Objectives {
			switch ob.Kind {
			case goodput.KindTPOT, goodput.KindITL:
				if !dec || ob.Threshold < o.DecodeLatency {
					o.DecodeLatency, o.DecodeTarget, dec = ob.Threshold, ob.Target, true
				}
			case goodput.KindTTFT:
				if !ttft || ob.Threshold < o.TTFTLatency {
					o.TTFTLatency, o.TTFTTarget, ttft = ob.Threshold, ob.Target, true
				}
			}
		}
	}
	return o
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// compute derives the signals of samples ss (oldest first); ceiling is
// the running ceiling observed over all retained history.
func compute(ss []sample, ceiling Value, obj Objectives) Signals {
	var sig Signals
	sig.Cycles = len(ss)
	if len(ss) == 0 {
		return sig
	}
	var (
		up, n                           float64
		run, wait, kv, hit              mean
		span                            float64
		ctr                             [snapshot.NumCounters]Value
		finOK, promptAtFinish           bool
		fin, errs, aborts               float64
		hists                           [snapshot.NumHists]*histDelta
		clock, power, throttled, gpuObs mean
		explained                       mean
		slope                           regression
		perRunning                      []float64
		genTimed, promptTimed           timed
	)
	t0 := ss[0].t
	for i := range ss {
		s := &ss[i]
		n++
		if s.up {
			up++
		}
		run.add(s.running)
		wait.add(s.waiting)
		kv.add(s.kv)
		hit.add(s.hitGauge)
		if s.kv.OK && s.running.OK && s.running.V >= 1 {
			perRunning = append(perRunning, s.kv.V/s.running.V)
		}
		if s.waiting.OK {
			slope.add(s.t.Sub(t0).Seconds(), s.waiting.V)
		}
		if s.gpu.ok {
			clock.add(s.gpu.clockRatio)
			if s.gpu.clockRatio.OK {
				explained.add(some(b2f(s.gpu.explained)))
			}
			power.add(s.gpu.powerW)
			if s.gpu.reasonsOK {
				throttled.add(some(b2f(s.gpu.throttled)))
				sig.GPUThrottleReasons |= s.gpu.reasons
			}
			gpuObs.add(some(1))
		}
		if !s.delta {
			continue
		}
		span += s.dt
		genTimed.add(s.genTimed)
		promptTimed.add(s.promptTimed)
		for c := range ctr {
			if s.ctr[c].OK {
				ctr[c] = some(ctr[c].V + s.ctr[c].V)
			}
		}
		promptAtFinish = promptAtFinish || s.promptAtFinish
		if s.finOK {
			finOK = true
			fin += s.finished
			errs += s.errors
			aborts += s.aborted
		}
		for h := range hists {
			d := s.hists[h]
			if d == nil {
				continue
			}
			switch {
			case hists[h] == nil:
				c := *d
				if d.cumulative != nil {
					c.cumulative = append([]float64(nil), d.cumulative...)
				}
				hists[h] = &c
			case slices.Equal(hists[h].bounds, d.bounds):
				a := hists[h]
				a.count += d.count
				a.sum += d.sum
				if a.cumulative != nil && d.cumulative != nil {
					for k := range a.cumulative {
						a.cumulative[k] += d.cumulative[k]
					}
				} else {
					a.cumulative = nil
				}
			}
		}
	}
	sig.Silent = silence(ss)
	sig.Span = time.Duration(span * float64(time.Second))
	sig.UpShare = some(up / n)
	sig.DownFor = some(ss[len(ss)-1].t.Sub(t0).Seconds())
	for i := len(ss) - 1; i >= 0; i-- {
		if ss[i].up {
			sig.DownFor = some(ss[len(ss)-1].t.Sub(ss[i].t).Seconds())
			break
		}
	}
	sig.Running, sig.Waiting, sig.KVUsage = run.value(), wait.value(), kv.value()
	sig.WaitingRecent = recent(ss, func(s *sample) Value { return s.waiting })
	if len(perRunning) > 0 {
		slices.Sort(perRunning)
		n := len(perRunning)
		sig.KVPerRunning = some((perRunning[(n-1)/2] + perRunning[n/2]) / 2)
	}
	sig.RunningCeiling = ceiling
	sig.WaitingSlope = slope.slope()
	sig.GPUClockRatio, sig.GPUPowerW, sig.GPUThrottledShare = clock.value(), power.value(), throttled.value()
	sig.GPUClockExplainedShare = explained.value()
	if span <= 0 {
		return sig
	}
	rate := func(c snapshot.Counter) Value {
		if !ctr[c].OK {
			return Value{}
		}
		return some(ctr[c].V / span)
	}
	sig.PreemptionsPerSecond = rate(snapshot.Preemptions)
	sig.PromptTokensPerSecond = rate(snapshot.PromptTokens)
	sig.GenerationTokensPerSecond = rate(snapshot.GenerationTokens)
	perToken := func(t timed) Value {
		if !t.ok || t.token <= 0 {
			return Value{}
		}
		return some(t.seconds / t.token)
	}
	sig.TimePerOutputTokenMean, sig.TimePerPromptTokenMean = perToken(genTimed), perToken(promptTimed)
	sig.EngineStepsPerSecond = rate(snapshot.EngineSteps)
	if n, ok := streamed(hists[snapshot.TTFT], hists[snapshot.ITL]); ok {
		sig.StreamedTokensPerSecond = some(n / span)
	}
	if q, h := ctr[snapshot.PrefixCacheQueries], ctr[snapshot.PrefixCacheHits]; q.OK && h.OK {
		if q.V > 0 {
			sig.PrefixHitRatio = some(h.V / q.V)
		}
	} else {
		sig.PrefixHitRatio = hit.value()
	}
	if finOK {
		sig.FinishedPerSecond = some(fin / span)
		if fin > 0 {
			sig.ErrorRatio, sig.AbortRatio = some(errs/fin), some(aborts/fin)
		}
	}
	if tt := hists[snapshot.TTFT]; tt != nil {
		sig.RequestsPerSecond = some(tt.count / span)
	} else if finOK {
		sig.RequestsPerSecond = sig.FinishedPerSecond
	}
	if tt := hists[snapshot.TTFT]; tt != nil && tt.count > 0 {
		switch {
		case !sig.PromptTokensPerSecond.OK:
		case promptAtFinish:
			// Counted as requests finish: per finished request, so that
			// prompts and requests are the same requests.
			if finOK && fin > 0 {
				sig.PromptTokensPerRequest = some(ctr[snapshot.PromptTokens].V / fin)
			}
		default:
			sig.PromptTokensPerRequest = some(ctr[snapshot.PromptTokens].V / tt.count)
		}
		sig.TTFTTail = quantile(tt, obj.TTFTTarget)
		sig.TTFTAttainment = attainment(tt, obj.TTFTLatency)
		if qt := hists[snapshot.QueueTime]; qt != nil && qt.count > 0 && tt.sum > 0 {
			sig.QueueShareOfTTFT = some(min(1, (qt.sum/qt.count)/(tt.sum/tt.count)))
		}
	}
	// The decode objective is judged per request (TPOT). With per-token
	// data only (SGLang, vLLM V0) the tail would count every prefill step
	// against every running request, which a healthy engine at the knee
	// already breaches; there the mean inter-token latency, the token-
	// weighted mean of TPOT, is judged against the threshold instead.
	if dec := hists[snapshot.TPOT]; dec != nil && dec.count > 0 {
		sig.DecodeTail = quantile(dec, obj.DecodeTarget)
		sig.DecodeAttainment = attainment(dec, obj.DecodeLatency)
	} else if it := hists[snapshot.ITL]; it != nil && it.count > 0 {
		sig.DecodeTail = quantile(it, obj.DecodeTarget)
		sig.DecodePerToken = true
	}
	if it := hists[snapshot.ITL]; it != nil && it.count > 0 {
		sig.DecodeMean = some(it.sum / it.count)
	} else if tp := hists[snapshot.TPOT]; tp != nil && tp.count > 0 {
		sig.DecodeMean = some(tp.sum / tp.count)
	}
	return sig
}

// quantile estimates the q-quantile of a histogram increase by linear
// interpolation inside the bucket, as histogram_quantile does; absent
// when it falls in the +Inf bucket or the buckets are gone.
func quantile(h *histDelta, q float64) Value {
	if h.cumulative == nil || h.count <= 0 {
		return Value{}
	}
	rank := q * h.count
	lo, clo := 0.0, 0.0
	for i, b := range h.bounds {
		c := h.cumulative[i]
		if c >= rank {
			if c == clo {
				return some(b)
			}
			return some(lo + (b-lo)*(rank-clo)/(c-clo))
		}
		lo, clo = b, c
	}
	if len(h.bounds) > 0 {
		return some(h.bounds[len(h.bounds)-1]) // at least the last finite bound
	}
	return Value{}
}

// attainment is the share at or under threshold t (goodput.GoodAt).
func attainment(h *histDelta, t float64) Value {
	if h.cumulative == nil || h.count <= 0 || t <= 0 {
		return Value{}
	}
	good, _ := goodput.GoodAt(h.bounds, h.cumulative, h.count, t)
	return some(good / h.count)
}

type mean struct{ sum, n float64 }

func (m *mean) add(v Value) {
	if v.OK && !math.IsNaN(v.V) {
		m.sum += v.V
		m.n++
	}
}

func (m mean) value() Value {
	if m.n == 0 {
		return Value{}
	}
	return some(m.sum / m.n)
}

type regression struct{ n, sx, sy, sxx, sxy float64 }

func (r *regression) add(x, y float64) {
	r.n++
	r.sx += x
	r.sy += y
	r.sxx += x * x
	r.sxy += x * y
}

func (r regression) slope() Value {
	d := r.n*r.sxx - r.sx*r.sx
	if r.n < 2 || d <= 0 {
		return Value{}
	}
	return some((r.n*r.sxy - r.sx*r.sy) / d)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// streamed counts the tokens observed in a TTFT and an inter-token
// histogram increase; not ok when the engine has neither.
func streamed(ttft, itl *histDelta) (float64, bool) {
	var n float64
	ok := false
	for _, h := range []*histDelta{ttft, itl} {
		if h != nil {
			n, ok = n+h.count, true
		}
	}
	return n, ok
}

// silence is Signals.Silent of ss (oldest first).
func silence(ss []sample) Value {
	var silent float64
	seen := false
	for i := len(ss) - 1; i >= 0; i-- {
		s := &ss[i]
		if !s.delta {
			continue
		}
		// Progress is a token or an engine step: an engine that counts
		// tokens only when a request completes (llama.cpp b11669, TGI)
		// and is still stepping through long generations is not silent,
		// nor one that observes each token in its latency histograms as
		// it streams and counts it only at completion
		// (llm-d-inference-sim).
		g, st := s.ctr[snapshot.GenerationTokens], s.ctr[snapshot.EngineSteps]
		if !g.OK && !st.OK {
			break
		}
		seen = true
		inflight := s.running.V + s.waiting.V
		tok, _ := streamed(s.hists[snapshot.TTFT], s.hists[snapshot.ITL])
		if g.OK && g.V > 0 || st.OK && st.V > 0 || tok > 0 || !s.running.OK || inflight < 1 {
			break
		}
		silent += s.dt
	}
	if !seen {
		return Value{}
	}
	return some(silent)
}

// recent is the mean of a gauge over the samples in the last quarter of
// ss's time, absent with fewer than two such samples.
func recent(ss []sample, gauge func(*sample) Value) Value {
	if len(ss) == 0 {
		return Value{}
	}
	last := ss[len(ss)-1].t
	from := last.Add(-last.Sub(ss[0].t) / 4)
	var m mean
	k := 0
	for i := len(ss) - 1; i >= 0 && !ss[i].t.Before(from); i-- {
		if g := gauge(&ss[i]); g.OK {
			m.add(g)
			k++
		}
	}
	if k < 2 {
		return Value{}
	}
	return m.value()
}
