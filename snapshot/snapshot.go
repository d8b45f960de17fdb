// Package snapshot defines the engine-neutral view of one scrape of one
// inference engine. Every engine adapter in collector/ produces a Snapshot;
// the goodput maths, the exporter and the simulator's checks read one. The
// names here follow the metric contract in the README, not any engine.
package snapshot

import (
	"slices"
	"time"
)

// Engine names an inference server family.
type Engine string

// The engines the adapters understand.
const (
	VLLM     Engine = "vllm"
	SGLang   Engine = "sglang"
	LlamaCPP Engine = "llamacpp"
	TGI      Engine = "tgi"    // Hugging Face text-generation-inference
	Triton   Engine = "triton" // Triton Inference Server with the TensorRT-LLM backend
	TRTLLM   Engine = "trtllm" // TensorRT-LLM's own OpenAI server, trtllm-serve
	Dynamo   Engine = "dynamo" // NVIDIA Dynamo's HTTP frontend
)

// Engines lists every known engine in a stable order.
var Engines = []Engine{VLLM, SGLang, LlamaCPP, TGI, Triton, TRTLLM, Dynamo}

// Gauge indexes the point-in-time signals of the contract.
type Gauge int

// Gauges of the contract.
const (
	Running             Gauge = iota // llm_requests_running
	Waiting                          // llm_requests_waiting
	KVCacheUsage                     // llm_kv_cache_usage_ratio, 0..1
	PrefixCacheHitRatio              // llm_prefix_cache_hit_ratio, 0..1 (engines that only give a rate)
	NumGauges
)

// Counter indexes the cumulative signals of the contract.
type Counter int

// Counters of the contract.
const (
	Preemptions        Counter = iota // llm_preemptions_total
	PromptTokens                      // llm_prompt_tokens_total
	GenerationTokens                  // llm_generation_tokens_total
	PrefixCacheQueries                // llm_prefix_cache_queries_total (tokens)
	PrefixCacheHits                   // llm_prefix_cache_hits_total (tokens)
	// EngineSteps is llm_engine_steps_total: forward passes (batches) the
	// engine ran. It advances every step while requests are served, even
	// on engines that count generated tokens only when a request
	// completes, so it tells a long generation from a hung engine.
	EngineSteps
	NumCounters
)

// Hist indexes the histograms of the contract: the latency histograms
// and the per-request output length.
type Hist int

// Histograms of the contract.
const (
	TTFT      Hist = iota // llm_time_to_first_token_seconds
	ITL                   // llm_inter_token_latency_seconds (one observation per token)
	TPOT                  // llm_request_time_per_output_token_seconds (one observation per request)
	E2E                   // llm_e2e_request_latency_seconds
	QueueTime             // llm_request_queue_time_seconds
	// OutputTokens is llm_request_generation_tokens: the generation tokens
	// of each finished request, one observation per request at finish
	// (vLLM's request_generation_tokens, SGLang's
	// generation_tokens_histogram). Its buckets bound the length of the
	// requests that failed an SLO, which is what makes goodput token
	// bounds true bounds.
	OutputTokens
	NumHists
)

// Histogram is a cumulative classic histogram as an engine exposes it,
// with the engine's own bucket bounds.
type Histogram struct {
	// Bounds are the finite upper bounds, strictly ascending.
	Bounds []float64
	// Cumulative[i] is the number of observations <= Bounds[i].
	Cumulative []float64
	// Count is the total number of observations (the +Inf bucket).
	Count float64
	// Sum of all observations.
	Sum float64
}

// SameLayout reports whether two histograms have identical bucket bounds.
func (h *Histogram) SameLayout(o *Histogram) bool {
	return h != nil && o != nil && slices.Equal(h.Bounds, o.Bounds)
}

// Clone returns a deep copy.
func (h *Histogram) Clone() *Histogram {
	if h == nil {
		return nil
	}
	return &Histogram{
		Bounds:     slices.Clone(h.Bounds),
		Cumulative: slices.Clone(h.Cumulative),
		Count:      h.Count,
		Sum:        h.Sum,
	}
}

// Value is a sample that may be absent: an engine that does not expose a
// signal leaves it absent, never zero.
type Value struct {
	V  float64
	OK bool
}

// Model holds the signals of one model served by a target. Engines that
// run several data-parallel ranks are already summed here.
type Model struct {
	Name     string
	Gauges   [NumGauges]Value
	Counters [NumCounters]Value
	// Finished counts finished requests by reason (stop, length, abort,
	// error, repetition). Nil when the engine exposes no such counter.
	Finished map[string]float64
	// Hists are nil where the engine exposes no such histogram.
	Hists [NumHists]*Histogram
	// HistSource names the engine family each histogram came from, for
	// example "vllm:time_per_output_token_seconds" where a fallback was used.
	HistSource [NumHists]string
	// HistFailed, CounterFailed and FinishedFailed mark signals whose
	// family was present in the body but unusable (cut short, NaN, a
	// negative count): absent here, with an error in Snapshot.Errors.
	HistFailed     [NumHists]bool
	CounterFailed  [NumCounters]bool
	FinishedFailed bool
	// Timing is the engine's own time per phase, cumulative, where it
	// reports one (llama.cpp): not contract series. The daemon derives
	// only mean times per token from it, as estimates.
	Timing Timing
}

// Timing is what an engine that times its phases reports, summed over
// requests: seconds spent generating and the tokens generated in them,
// seconds spent on prompts and the prompt tokens computed in them (not
// those found in a cache). Each pair is counted together (llama.cpp: as
// a request completes), so that over an interval seconds over tokens is
// the mean time per token. Absent (not OK) where the engine has none.
type Timing struct {
	GenerationSeconds, GenerationTokens Value
	PromptSeconds, PromptTokens         Value
}

// Snapshot is one successful scrape of one target, normalized.
type Snapshot struct {
	Target string
	Engine Engine
	// Time is when the body was read.
	Time time.Time
	// ProcessStart is the engine process start time in Unix seconds, 0 when
	// the engine does not say.
	ProcessStart float64
	// ProcessToken says that ProcessStart is an opaque token naming the
	// process (llama-server's Process-Start-Time-Unix header carries
	// microseconds of the monotonic clock since boot), to be compared for
	// equality only, not Unix seconds.
	ProcessToken bool
	// Restarted is set when this snapshot comes from a new engine process
	// that started after the previous scrape of the same target: its
	// process start time changed, or (engines that publish none) every
	// cumulative series went down at once. Consumers treat every
	// cumulative value as a fresh start (the new value is the delta).
	// A single series that went down is not a restart: consumers judge
	// each series on its own.
	Restarted bool
	// Baseline is set when this snapshot comes from another engine process
	// whose counts are of unknown age (it started before the previous
	// scrape, or the engine behind the address changed): consumers only
	// set their baselines from it, as for a target's first snapshot.
	Baseline bool
	// NoReset is set when the collector has a witness that no series of
	// this snapshot started again since the previous one: the process
	// start time did not change, or every counter went down together by
	// less than a fresh start explains. A series that went down then
	// glitched (a rank missing from the body, a torn read): consumers add
	// nothing for it and do not take it for a reset of that series.
	NoReset bool
	// Models are sorted by Name.
	Models []Model
	// Duplicates counts samples of a series already read earlier in the
	// same body; the first sample was kept and these were ignored.
	// DuplicateSeries is the first such series, as the engine wrote it.
	Duplicates      int
	DuplicateSeries string
	// Shortened counts the series whose model name or finish reason was
	// longer than MaxLabelValue and was shortened (CapLabelValue);
	// ShortenedValue is the first such value, as shortened.
	Shortened      int
	ShortenedValue string
	// LeftOut counts the series of the body left out unread, by reason
	// (the parser's: collector.LeftOutReasons); nil when none was.
	LeftOut map[string]int
	// Errors are per-family problems (a histogram cut short, a bucket out
	// of order). The family is left out; the rest of the snapshot stands.
	Errors []error
}

// Model returns the named model, or nil.
func (s *Snapshot) Model(name string) *Model {
	i, ok := slices.BinarySearchFunc(s.Models, name, func(m Model, n string) int {
		switch {
		case m.Name < n:
			return -1
		case m.Name > n:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return &s.Models[i]
}
