package config

import (
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

// Diagnosis is the failure-mode classifier's section; every field is
// optional and defaults as docs/failure-modes.md says.
type Diagnosis struct {
	// Window is the span each judgement covers; Baseline the trailing
	// history it is compared with, lagged by one window.
	Window   Duration `yaml:"window"`
	Baseline Duration `yaml:"baseline"`
	// Enter consecutive matching judgements raise a mode; Leave clean
	// ones clear it.
	Enter      int                 `yaml:"enter"`
	Leave      int                 `yaml:"leave"`
	Thresholds DiagnosisThresholds `yaml:"thresholds"`
}

// DiagnosisThresholds override the classifier's named thresholds; the
// names and meanings are diagnosis.Thresholds'. Latencies are durations.
type DiagnosisThresholds struct {
	QueueSlope           *float64  `yaml:"queue_slope"`
	QueueMinWaiting      *float64  `yaml:"queue_min_waiting"`
	CeilingShare         *float64  `yaml:"ceiling_share"`
	FlatQueueShare       *float64  `yaml:"flat_queue_share"`
	KVHigh               *float64  `yaml:"kv_high"`
	KVHold               *float64  `yaml:"kv_hold"`
	PreemptionRate       *float64  `yaml:"preemption_rate"`
	MonopolyRunningShare *float64  `yaml:"monopoly_running_share"`
	MonopolyKVJump       *float64  `yaml:"monopoly_kv_jump"`
	MonopolyKVHold       *float64  `yaml:"monopoly_kv_hold"`
	PromptJump           *float64  `yaml:"prompt_jump"`
	DecodeJump           *float64  `yaml:"decode_jump"`
	HitRatioFall         *float64  `yaml:"hit_ratio_fall"`
	MinBaselineHitRatio  *float64  `yaml:"min_baseline_hit_ratio"`
	DecodeLatency        *Duration `yaml:"decode_latency"`
	DecodeTarget         *float64  `yaml:"decode_target"`
	TTFTLatency          *Duration `yaml:"ttft_latency"`
	TTFTTarget           *float64  `yaml:"ttft_target"`
	DecodeMeanShare      *float64  `yaml:"decode_mean_share"`
	TTFTHold             *float64  `yaml:"ttft_hold"`
	ClockRatio           *float64  `yaml:"clock_ratio"`
	ThrottleShare        *float64  `yaml:"throttle_share"`
	ErrorRatio           *float64  `yaml:"error_ratio"`
	MinFinished          *float64  `yaml:"min_finished"`
	DownShare            *float64  `yaml:"down_share"`
	DecodeHoldJump       *float64  `yaml:"decode_hold_jump"`
	StallSilence         *Duration `yaml:"stall_silence"`
	StallSuspect         *Duration `yaml:"stall_suspect"`
	QueueSlopeShare      *float64  `yaml:"queue_slope_share"`
	QueueMinSeconds      *Duration `yaml:"queue_min_seconds"`
	QueueBatchShare      *float64  `yaml:"queue_batch_share"`
	SaturationJump       *float64  `yaml:"saturation_jump"`
	QueueSustain         *Duration `yaml:"queue_sustain"`
	QueueStandingBatches *float64  `yaml:"queue_standing_batches"`
	QueuePauseWaits      *float64  `yaml:"queue_pause_waits"`
}

// thresholdKind says what values a threshold accepts.
type thresholdKind int

const (
	ratio    thresholdKind = iota // in (0, 1]
	factor                        // > 1
	positive                      // > 0
	latency                       // a positive duration
)

type thresholdField struct {
	key  string
	kind thresholdKind
	in   *float64
	dur  *Duration
	out  *float64
}

// fields pairs each override with the setting it replaces.
func (t *DiagnosisThresholds) fields(out *diagnosis.Thresholds) []thresholdField {
	f := func(key string, kind thresholdKind, in *float64, o *float64) thresholdField {
		return thresholdField{key: key, kind: kind, in: in, out: o}
	}
	d := func(key string, in *Duration, o *float64) thresholdField {
		return thresholdField{key: key, kind: latency, dur: in, out: o}
	}
	return []thresholdField{
		f("queue_slope", positive, t.QueueSlope, &out.QueueSlope),
		f("queue_min_waiting", positive, t.QueueMinWaiting, &out.QueueMinWaiting),
		f("ceiling_share", ratio, t.CeilingShare, &out.CeilingShare),
		f("flat_queue_share", ratio, t.FlatQueueShare, &out.FlatQueueShare),
		f("kv_high", ratio, t.KVHigh, &out.KVHigh),
		f("kv_hold", ratio, t.KVHold, &out.KVHold),
		f("preemption_rate", positive, t.PreemptionRate, &out.PreemptionRate),
		f("monopoly_running_share", ratio, t.MonopolyRunningShare, &out.MonopolyRunningShare),
		f("monopoly_kv_jump", factor, t.MonopolyKVJump, &out.MonopolyKVJump),
		f("monopoly_kv_hold", factor, t.MonopolyKVHold, &out.MonopolyKVHold),
		f("prompt_jump", factor, t.PromptJump, &out.PromptJump),
		f("decode_jump", factor, t.DecodeJump, &out.DecodeJump),
		f("hit_ratio_fall", ratio, t.HitRatioFall, &out.HitRatioFall),
		f("min_baseline_hit_ratio", ratio, t.MinBaselineHitRatio, &out.MinBaselineHitRatio),
		d("decode_latency", t.DecodeLatency, &out.DecodeLatency),
		f("decode_target", ratio, t.DecodeTarget, &out.DecodeTarget),
		d("ttft_latency", t.TTFTLatency, &out.TTFTLatency),
		f("ttft_target", ratio, t.TTFTTarget, &out.TTFTTarget),
		f("decode_mean_share", ratio, t.DecodeMeanShare, &out.DecodeMeanShare),
		f("ttft_hold", ratio, t.TTFTHold, &out.TTFTHold),
		f("clock_ratio", ratio, t.ClockRatio, &out.ClockRatio),
		f("throttle_share", ratio, t.ThrottleShare, &out.ThrottleShare),
		f("error_ratio", ratio, t.ErrorRatio, &out.ErrorRatio),
		f("min_finished", positive, t.MinFinished, &out.MinFinished),
		f("down_share", ratio, t.DownShare, &out.DownShare),
		f("decode_hold_jump", factor, t.DecodeHoldJump, &out.DecodeHoldJump),
		d("stall_silence", t.StallSilence, &out.StallSilence),
		d("stall_suspect", t.StallSuspect, &out.StallSuspect),
		f("queue_slope_share", ratio, t.QueueSlopeShare, &out.QueueSlopeShare),
		d("queue_min_seconds", t.QueueMinSeconds, &out.QueueMinSeconds),
		f("queue_batch_share", ratio, t.QueueBatchShare, &out.QueueBatchShare),
		f("saturation_jump", factor, t.SaturationJump, &out.SaturationJump),
		d("queue_sustain", t.QueueSustain, &out.QueueSustain),
		f("queue_standing_batches", positive, t.QueueStandingBatches, &out.QueueStandingBatches),
		f("queue_pause_waits", positive, t.QueuePauseWaits, &out.QueuePauseWaits),
	}
}

// DiagnosisSettings returns the classifier's settings: the defaults with
// what the file overrides.
func (c *Config) DiagnosisSettings() diagnosis.Settings {
	s := diagnosis.DefaultSettings()
	d := c.Diagnosis
	if d == nil {
		return s
	}
	if d.Window > 0 {
		s.Window = time.Duration(d.Window)
	}
	if d.Baseline > 0 {
		s.Baseline = time.Duration(d.Baseline)
	}
	if d.Enter > 0 {
		s.Enter = d.Enter
	}
	if d.Leave > 0 {
		s.Leave = d.Leave
	}
	for _, f := range d.Thresholds.fields(&s.Thresholds) {
		switch {
		case f.in != nil:
			*f.out = *f.in
		case f.dur != nil:
			*f.out = f.dur.Seconds()
		}
	}
	return s
}

func (c *Config) validateDiagnosis(loc locator, add func(int, string, string, ...any)) {
	d := c.Diagnosis
	if d == nil {
		return
	}
	at := func(k ...any) int { return loc.line(append([]any{"diagnosis"}, k...)...) }
	if d.Window < 0 {
		add(at("window"), "diagnosis.window", "must be positive")
	}
	if d.Baseline < 0 {
		add(at("baseline"), "diagnosis.baseline", "must be positive")
	}
	if d.Enter < 0 {
		add(at("enter"), "diagnosis.enter", "must be at least 1")
	}
	if d.Leave < 0 {
		add(at("leave"), "diagnosis.leave", "must be at least 1")
	}
	s := c.DiagnosisSettings()
	if s.Baseline < s.Window {
		add(at("baseline"), "diagnosis.baseline", "%s is shorter than the window %s: the baseline must cover at least one window", fmtDur(s.Baseline), fmtDur(s.Window))
	}
	var scratch diagnosis.Thresholds
	for _, f := range d.Thresholds.fields(&scratch) {
		line, path := at("thresholds", f.key), "diagnosis.thresholds."+f.key
		switch {
		case f.kind == latency && f.dur != nil && *f.dur <= 0:
			add(line, path, "must be a positive duration")
		case f.in == nil:
		case f.kind == ratio && !(*f.in > 0 && *f.in <= 1):
			add(line, path, "must be a ratio in (0, 1], got %g", *f.in)
		case f.kind == factor && !(*f.in > 1):
			add(line, path, "must be a factor above 1, got %g", *f.in)
		case f.kind == positive && !(*f.in > 0):
			add(line, path, "must be positive, got %g", *f.in)
		}
	}
}

func fmtDur(d time.Duration) string { return Duration(d).String() }
