package diagnosis

import (
	"math"
	"slices"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Value is a signal that may be absent: an engine or GPU backend that
// does not expose what it is computed from leaves it absent.
type Value = snapshot.Value

func some(v float64) Value { return Value{V: v, OK: true} }

// histDelta is the increase of one histogram between two snapshots.
type histDelta struct {
	bounds     []float64 // shared with the snapshot's layout; never written
	cumulative []float64 // nil once the sample is older than the window
	count, sum float64
}

// gpuSample is the attributed GPUs as read in one cycle.
type gpuSample struct {
	ok         bool
	clockRatio Value // lowest SM clock / max clock among them
	powerW     Value // summed board power
	reasonsOK  bool
	throttled  bool // a thermal, hardware or power-brake slowdown on any of them
	reasons    uint64
	// explained: the GPU of the lowest clock ratio gave a reason for its
	// low clock that is no fault (clockExplained).
	explained bool
}

// sample is one collection cycle of one target.
type sample struct {
	t  time.Time
	up bool
	// episode is set when the sample was in a window in which a mode
	// matched or while one was raised: it never enters the baseline.
	episode bool
	// Gauges of the snapshot, summed over models (KV usage: the fullest).
	running, waiting, kv, hitGauge Value
	// delta is set when the counters below are increases since the
	// previous successful snapshot over dt seconds.
	delta bool
	dt    float64
	ctr   [snapshot.NumCounters]Value
	// Finished requests by class, when the engine has finish reasons.
	finOK                     bool
	finished, errors, aborted float64
	// promptAtFinish: the engine counts prompt tokens when a request
	// finishes (promptCountedAtFinish), not at its first token.
	promptAtFinish bool
	hists          [snapshot.NumHists]*histDelta
	// genTimed and promptTimed are the engine's own timing of the
	// interval (snapshot.Timing): seconds and the tokens they timed,
	// each pair taken together or not at all.
	genTimed, promptTimed timed
	gpu                   gpuSample
}

// timed is seconds an engine spent on a phase and the tokens of it.
type timed struct {
	ok             bool
	seconds, token float64
}

// timedDelta is the increase of one pair of timing counters, or not ok
// when either is missing, unusable or went down without a restart.
func timedDelta(pSec, pTok, sec, tok snapshot.Value, restarted bool) timed {
	if !sec.OK || !tok.OK || !finite(sec.V) || !finite(tok.V) || sec.V < 0 || tok.V < 0 {
		return timed{}
	}
	if restarted {
		return timed{true, sec.V, tok.V}
	}
	if !pSec.OK || !pTok.OK || sec.V < pSec.V || tok.V < pTok.V {
		return timed{}
	}
	return timed{true, sec.V - pSec.V, tok.V - pTok.V}
}

func (a *timed) add(b timed) {
	if b.ok {
		a.ok, a.seconds, a.token = true, a.seconds+b.seconds, a.token+b.token
	}
}

// Throttle reason bits that slow a GPU whatever its load: hw_slowdown,
// sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown.
// sw_power_cap is left out: a GPU at its power limit under full load is
// normal, and counts only through its clock (Thresholds.ClockRatio).
const slowdownBits = 0x8 | 0x20 | 0x40 | 0x80

// NVML's clock event reasons that lower a clock with nothing wrong.
const (
	gpuIdle    = 0x1 // no kernel running: the idle clock
	swPowerCap = 0x4 // held at the power limit
)

// loweredShare: an enforced power limit under this share of the board's
// default is a cap someone set, not the board's own budget.
const loweredShare = 0.98

// clockExplained reports whether d's clock is low for a reason that is no
// fault: it is idle (gpu_idle), or it spends its whole power budget at the
// board's default limit (sw_power_cap with no lowered limit in sight; an
// unknown default counts as the default). A real H200 under dense bf16
// matrix products held 0.74 to 0.77 of its maximum clock at its 700 W
// default limit (testdata/h200-gemm-at-power-limit.csv), and idles at
// 345 of 1980 MHz.
func clockExplained(d *gpu.Device) bool {
	if !d.Throttle.OK {
		return false
	}
	if d.Throttle.Mask&gpuIdle != 0 {
		return true
	}
	if d.Throttle.Mask&swPowerCap == 0 {
		return false
	}
	lowered := d.PowerLimitW.OK && d.PowerLimitDefaultW.OK && d.PowerLimitW.V < loweredShare*d.PowerLimitDefaultW.V
	return !lowered
}

// gpuOf reduces the attributed devices of one cycle.
func gpuOf(devs []gpu.Device) gpuSample {
	var g gpuSample
	for i := range devs {
		d := &devs[i]
		g.ok = true
		if d.SMClockHz.OK && d.SMClockMaxHz.OK && d.SMClockMaxHz.V > 0 {
			r := d.SMClockHz.V / d.SMClockMaxHz.V
			if !g.clockRatio.OK || r < g.clockRatio.V {
				g.clockRatio = some(r)
				g.explained = clockExplained(d)
			}
		}
		if d.PowerW.OK {
			g.powerW = some(g.powerW.V + d.PowerW.V)
		}
		if d.Throttle.OK {
			g.reasonsOK = true
			g.reasons |= d.Throttle.Mask
			if d.Throttle.Mask&slowdownBits != 0 {
				g.throttled = true
			}
		}
	}
	return g
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// sane reports whether a histogram can be read: bounds and counts of one
// length, finite, counts never above the total.
func sane(h *snapshot.Histogram) bool {
	if len(h.Bounds) != len(h.Cumulative) || !finite(h.Count) || !finite(h.Sum) || h.Count < 0 {
		return false
	}
	for i, c := range h.Cumulative {
		if !finite(c) || c < 0 || c > h.Count || !finite(h.Bounds[i]) {
			return false
		}
	}
	return true
}

// promptCountedAtFinish reports whether engine counts a request's prompt
// tokens when the request finishes rather than when its prompt has been
// computed: trtllm-serve logs its per-request metrics, prompt tokens
// included, once a request finishes. The prompt tokens of a span then
// belong to the requests finished in it, not to those that got their
// first token in it, and prompt tokens per request divides by the
// former. (TGI and llama.cpp also count at completion but have no TTFT
// histogram, which prompt tokens per request is otherwise divided by.)
func promptCountedAtFinish(e snapshot.Engine) bool { return e == snapshot.TRTLLM }

// delta is cur − prev for a cumulative value, reset-aware: after a
// restart, or when the value went down, the new value is the increase.
func delta(prev, cur float64, restarted bool) float64 {
	if restarted || cur < prev {
		return cur
	}
	return cur - prev
}

// newSample builds the sample of a successful scrape; prev is the
// previous successful snapshot (nil for the first one).
func newSample(now time.Time, prev, cur *snapshot.Snapshot, devs []gpu.Device) sample {
	s := sample{t: now, up: true, gpu: gpuOf(devs), promptAtFinish: promptCountedAtFinish(cur.Engine)}
	for i := range cur.Models {
		m := &cur.Models[i]
		addGauge(&s.running, m.Gauges[snapshot.Running], false)
		addGauge(&s.waiting, m.Gauges[snapshot.Waiting], false)
		addGauge(&s.kv, m.Gauges[snapshot.KVCacheUsage], true)
		addGauge(&s.hitGauge, m.Gauges[snapshot.PrefixCacheHitRatio], true)
	}
	if prev == nil {
		return s
	}
	s.delta = true
	s.dt = cur.Time.Sub(prev.Time).Seconds()
	if s.dt <= 0 {
		s.dt = 0
		s.delta = false
		return s
	}
	for i := range cur.Models {
		m := &cur.Models[i]
		p := prev.Model(m.Name)
		if p == nil && !cur.Restarted {
			continue // a model that appeared: its first scrape is its baseline
		}
		restarted := cur.Restarted
		var pt snapshot.Timing
		if p != nil {
			pt = p.Timing
		}
		ct := m.Timing
		s.genTimed.add(timedDelta(pt.GenerationSeconds, pt.GenerationTokens, ct.GenerationSeconds, ct.GenerationTokens, restarted))
		s.promptTimed.add(timedDelta(pt.PromptSeconds, pt.PromptTokens, ct.PromptSeconds, ct.PromptTokens, restarted))
		for c := range snapshot.NumCounters {
			v := m.Counters[c]
			if !v.OK || !finite(v.V) || v.V < 0 {
				continue
			}
			if !restarted && !p.Counters[c].OK {
				continue // a counter that appeared: its history is not this interval's
			}
			pv := 0.0
			if p != nil {
				pv = p.Counters[c].V
			}
			s.ctr[c] = some(s.ctr[c].V + delta(pv, v.V, restarted))
		}
		if m.Finished != nil {
			s.finOK = true
			for reason, v := range m.Finished {
				if !finite(v) || v < 0 {
					continue
				}
				var pv float64
				if p != nil {
					pv = p.Finished[reason]
				}
				d := delta(pv, v, restarted)
				s.finished += d
				switch reason {
				case "error":
					s.errors += d
				case "abort":
					s.aborted += d
				}
			}
		}
		for h := range snapshot.NumHists {
			cur := m.Hists[h]
			if cur == nil || !sane(cur) {
				continue
			}
			var ph *snapshot.Histogram
			if p != nil {
				ph = p.Hists[h]
			}
			d := histDiff(ph, cur, restarted)
			if d == nil {
				continue
			}
			if s.hists[h] == nil {
				s.hists[h] = d
			} else if slices.Equal(s.hists[h].bounds, d.bounds) {
				for k := range d.cumulative {
					s.hists[h].cumulative[k] += d.cumulative[k]
				}
				s.hists[h].count += d.count
				s.hists[h].sum += d.sum
			}
		}
	}
	return s
}

func addGauge(dst *Value, v Value, fullest bool) {
	switch {
	case !v.OK || !finite(v.V) || v.V < 0:
	case !dst.OK:
		*dst = v
	case fullest:
		dst.V = max(dst.V, v.V)
	default:
		dst.V += v.V
	}
}

// histDiff is the increase of a histogram; nil when it cannot be known
// (the layout changed without a restart).
func histDiff(prev, cur *snapshot.Histogram, restarted bool) *histDelta {
	d := &histDelta{bounds: cur.Bounds, cumulative: make([]float64, len(cur.Cumulative)), count: cur.Count, sum: cur.Sum}
	copy(d.cumulative, cur.Cumulative)
	switch {
	case restarted:
		return d
	case prev == nil:
		return nil // a family that appeared: its history is not this interval's
	}
	if !prev.SameLayout(cur) {
		return nil
	}
	if cur.Count < prev.Count {
		return d // the engine restarted: the new histogram is the increase
	}
	for k := range d.cumulative {
		d.cumulative[k] = max(0, cur.Cumulative[k]-prev.Cumulative[k])
	}
	d.count, d.sum = cur.Count-prev.Count, max(0, cur.Sum-prev.Sum)
	return d
}
