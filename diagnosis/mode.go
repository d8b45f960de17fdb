package diagnosis

// Mode names a failure mode; the value is the mode label of
// llm_failure_mode.
type Mode int

// The eight failure modes, in the order docs/failure-modes.md describes them.
const (
	QueueGrowth Mode = iota
	KVPreemption
	PrefillInterference
	KVMonopoly
	PrefixCacheCollapse
	DecodeSaturation
	GPUThrottling
	EngineStall
	NumModes
)

var modeNames = [NumModes]string{
	"queue_growth", "kv_preemption", "prefill_interference", "kv_monopoly",
	"prefix_cache_collapse", "decode_saturation", "gpu_throttling", "engine_stall",
}

// String is the mode label value.
func (m Mode) String() string {
	if m < 0 || m >= NumModes {
		return "unknown"
	}
	return modeNames[m]
}

// Modes lists every mode in the order of docs/failure-modes.md.
func Modes() []Mode {
	out := make([]Mode, NumModes)
	for i := range out {
		out[i] = Mode(i)
	}
	return out
}

// ParseMode accepts a mode label value.
func ParseMode(s string) (Mode, bool) {
	for i, n := range modeNames {
		if n == s {
			return Mode(i), true
		}
	}
	return 0, false
}

// Explains is the precedence between modes: when a mode matches (or is
// raised), every mode it lists is masked, because its symptoms follow
// from the first and its remedy would be the wrong one.
//
//   - engine_stall masks everything: a hung or failing engine produces
//     every other symptom (a queue, no tokens, full caches), and the only
//     remedy is to restart it.
//   - gpu_throttling masks the load symptoms it causes at unchanged
//     traffic: a growing queue, a broken decode tail, preemptions and
//     prompt stalls are all slower steps.
//   - kv_preemption explains a queue, a broken decode tail and a full
//     cache with few running (the evicted requests wait).
//   - kv_monopoly explains a queue (short requests cannot be admitted)
//     and a prefill interference: the long contexts that hold the cache
//     are long prompts, whose prefill stalls everyone's decode steps, and
//     its remedy (cap the context, a long-context pool) is the same.
//   - prefill_interference explains a broken decode tail and a queue.
//   - prefix_cache_collapse explains a queue and slower prompts: every
//     prompt is computed again.
//   - decode_saturation explains nothing else.
//   - queue_growth explains nothing else.
var Explains = map[Mode][]Mode{
	EngineStall:         {QueueGrowth, KVPreemption, PrefillInterference, KVMonopoly, PrefixCacheCollapse, DecodeSaturation, GPUThrottling},
	GPUThrottling:       {QueueGrowth, KVPreemption, PrefillInterference, DecodeSaturation, PrefixCacheCollapse},
	KVPreemption:        {QueueGrowth, DecodeSaturation, KVMonopoly},
	KVMonopoly:          {QueueGrowth, PrefillInterference},
	PrefillInterference: {QueueGrowth, DecodeSaturation},
	PrefixCacheCollapse: {QueueGrowth, PrefillInterference},
}

// masks reports whether a matching or raised m hides other.
func masks(m, other Mode) bool {
	for _, x := range Explains[m] {
		if x == other {
			return true
		}
	}
	return false
}
