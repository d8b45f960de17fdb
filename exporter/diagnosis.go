package exporter

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// diagSignal is one llm_signal_* gauge: evidence of the classifier that
// PromQL cannot compute from the other series (baselines, slopes, the
// observed batch ceiling), for alert annotations to quote.
type diagSignal struct {
	name, help string
	get        func(v *diagnosis.Verdict) diagnosis.Value
	// needs is what the signal is computed from: any one of the lists
	// of contract series, all of that list present (nil: not from
	// contract series, but the GPU backend's readings or the engine's
	// own timing).
	needs [][]string
}

// Contract series the signals are computed from.
const (
	nRunning = "llm_requests_running"
	nWaiting = "llm_requests_waiting"
	nKV      = "llm_kv_cache_usage_ratio"
	nPrompt  = "llm_prompt_tokens_total"
	nGen     = "llm_generation_tokens_total"
	nTTFT    = "llm_time_to_first_token_seconds"
	nITL     = "llm_inter_token_latency_seconds"
	nTPOT    = "llm_request_time_per_output_token_seconds"
)

// SignalInputs says, per llm_signal_* gauge, which contract series it is
// computed from: any one of the lists, every series of that list. A
// gauge whose engine lacks them is never exported for the target; the
// dashboards' "no data" texts are derived from it.
func SignalInputs() map[string][][]string {
	out := map[string][][]string{}
	for _, s := range diagSignals {
		out[s.name] = s.needs
	}
	return out
}

var diagSignals = []diagSignal{
	{"llm_signal_waiting_slope", "Growth of the waiting queue over the diagnosis window, in requests per second (least squares).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.WaitingSlope }, [][]string{{nWaiting}}},
	{"llm_signal_waiting_slope_threshold", "Growth of the waiting queue, in requests per second, from which queue_growth counts the queue as growing in the diagnosis window: queue_slope, or more where the engine serves many requests a second (queue_slope_share of them) or, counting no requests, runs a large batch (queue_batch_share of it).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.QueueSlopeBar }, [][]string{{nWaiting}}},
	{"llm_signal_waiting_threshold", "Mean waiting queue from which queue_growth counts a growing queue in the diagnosis window: queue_min_waiting, or more where the engine serves many requests a second (queue_min_seconds of them) or, counting no requests, runs a large batch (queue_batch_share of it).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.QueueWaitingBar }, [][]string{{nWaiting}}},
	{"llm_signal_running_ceiling", "Largest running batch seen over the diagnosis baseline and window: the batch ceiling as far as it can be observed.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.RunningCeiling }, [][]string{{nRunning}}},
	{"llm_signal_kv_cache_per_running_request", "KV-cache usage over the running batch, median over the diagnosis window's scrapes: the share of the cache one running request holds.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.KVPerRunning }, [][]string{{nKV, nRunning}}},
	{"llm_signal_kv_cache_per_running_request_baseline", "llm_signal_kv_cache_per_running_request over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.KVPerRunning }, [][]string{{nKV, nRunning}}},
	{"llm_signal_prompt_tokens_per_request", "Prompt tokens per request in the diagnosis window (per request that got its first token; per finished request on trtllm-serve, which counts prompt tokens when a request finishes).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.PromptTokensPerRequest }, [][]string{{nPrompt, nTTFT}}},
	{"llm_signal_prompt_tokens_per_request_baseline", "Prompt tokens per request over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.PromptTokensPerRequest }, [][]string{{nPrompt, nTTFT}}},
	{"llm_signal_prefix_cache_hit_ratio_baseline", "Prefix-cache hit ratio (hit tokens over queried tokens) over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.PrefixHitRatio }, [][]string{{"llm_prefix_cache_queries_total", "llm_prefix_cache_hits_total"}, {"llm_prefix_cache_hit_ratio"}}},
	{"llm_signal_inter_token_latency_mean_seconds_baseline", "Mean inter-token latency over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.DecodeMean }, [][]string{{nITL}, {nTPOT}}},
	{"llm_signal_generation_tokens_per_second_baseline", "Generation tokens per second over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.GenerationTokensPerSecond }, [][]string{{nGen}}},
	{"llm_signal_decode_attainment_ratio", "Share of requests within the decode (TPOT) objective the decode_saturation rule judges, in the diagnosis window; absent where the engine has only per-token data.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.DecodeAttainment }, [][]string{{nTPOT}}},
	{"llm_signal_time_per_output_token_mean_seconds", "Estimate, from the engine's own timing (llama.cpp: tokens_predicted_seconds_total over tokens_predicted_total): mean seconds per generated token of the requests that completed in the diagnosis window; absent where the engine does not time its phases. Not a TPOT measurement and never judged against an objective.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.TimePerOutputTokenMean }, nil},
	{"llm_signal_time_per_prompt_token_mean_seconds", "Estimate, from the engine's own timing (llama.cpp: prompt_seconds_total over prompt_tokens_total, the prompt tokens it computed, not those from its cache): mean seconds per computed prompt token of the requests that completed in the diagnosis window; absent where the engine does not time its phases.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.TimePerPromptTokenMean }, nil},
	{"llm_signal_gpu_sm_clock_ratio_baseline", "Lowest SM clock over its maximum among the target's GPUs, mean over the diagnosis baseline (lagged by one window).",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Baseline.GPUClockRatio }, nil},
	{"llm_signal_gpu_throttled_ratio", "Share of the diagnosis window's GPU readings with a thermal, hardware or power-brake slowdown reason on any of the target's GPUs.",
		func(v *diagnosis.Verdict) diagnosis.Value { return v.Window.GPUThrottledShare }, nil},
}

// diagDescs are the descriptors of a target's failure-mode series.
type diagDescs struct {
	mode, supported *prometheus.Desc
	signals         []*prometheus.Desc
}

func newDiagDescs(cl prometheus.Labels) *diagDescs {
	d := &diagDescs{
		mode: prometheus.NewDesc("llm_failure_mode",
			"1 while the failure-mode classifier names this mode for the target, 0 otherwise; only modes the target supports (see llm_failure_mode_supported). A mode is raised after diagnosis.enter consecutive matching judgements of the window and cleared after diagnosis.leave clean ones.",
			[]string{"engine", "mode"}, cl),
		supported: prometheus.NewDesc("llm_failure_mode_supported",
			"1 when the target's engine and GPU backend expose the signals the mode's rule needs, 0 when they do not (the mode is then unsupported, never reported as clear).",
			[]string{"engine", "mode"}, cl),
	}
	for _, s := range diagSignals {
		d.signals = append(d.signals, prometheus.NewDesc(s.name, s.help, []string{"engine"}, cl))
	}
	return d
}

// setDiagnosis applies the diagnosis settings and the target's SLOs,
// keeping the history.
func (t *target) setDiagnosis(s diagnosis.Settings, slos []goodput.SLO) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.diag == nil {
		t.diag = diagnosis.New(s)
	} else {
		t.diag.Reconfigure(s)
	}
	t.diag.SetObjectives(diagnosis.ObjectivesFor(t.cfg.Name, slos, s.Thresholds))
}

// diagnose folds the cycle into the classifier; t.mu is held. snap is
// nil when the scrape failed.
func (t *target) diagnose(now time.Time, snap *snapshot.Snapshot) {
	if t.diag == nil {
		t.diag = diagnosis.New(diagnosis.DefaultSettings())
	}
	t.diag.Observe(now, snap, t.gpu.devs, len(t.gpu.devs) > 0)
}

// verdict returns the latest judgement.
func (t *target) verdict() (diagnosis.Verdict, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.diag == nil {
		return diagnosis.Verdict{}, false
	}
	v := t.diag.Verdict()
	return v, !v.At.IsZero()
}

// diagnosisMetrics appends the failure-mode series; t.mu is held.
func (t *target) diagnosisMetrics(s collector.Sink, engine string) {
	if t.diag == nil {
		return
	}
	v := t.diag.Verdict()
	if v.At.IsZero() {
		return
	}
	d := t.diagD
	for _, m := range diagnosis.Modes() {
		st := v.Modes[m]
		s.Sample(d.supported, prometheus.GaugeValue, b2f(st.Supported), collector.Labels(engine, m.String()))
		if st.Supported {
			s.Sample(d.mode, prometheus.GaugeValue, b2f(st.Raised), collector.Labels(engine, m.String()))
		}
	}
	if !v.Ready {
		return
	}
	for i, sig := range diagSignals {
		if x := sig.get(&v); x.OK {
			s.Sample(d.signals[i], prometheus.GaugeValue, x.V, collector.Labels(engine))
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Verdict is the latest failure-mode judgement of the named target, for
// a live view; false when the target is unknown or not yet judged.
func (e *Exporter) Verdict(target string) (diagnosis.Verdict, bool) {
	e.mu.Lock()
	t := e.targets[target]
	e.mu.Unlock()
	if t == nil {
		return diagnosis.Verdict{}, false
	}
	return t.verdict()
}
