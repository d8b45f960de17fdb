package sim

import (
	"encoding/json"
	"slices"
	"sort"
	"time"
)

// Record is the ground truth of one finished request. Times are virtual.
type Record struct {
	ID    uint64
	Class string
	// Lever is the lever in force when the request arrived.
	Lever          Lever
	Arrival        time.Duration
	Scheduled      bool
	FirstScheduled time.Duration
	HasFirstToken  bool
	FirstToken     time.Duration
	LastToken      time.Duration
	Finish         time.Duration
	PromptTokens   int
	OutputTokens   int
	MaxTokens      int
	// CachedTokens were prefix-cache hits at first admission.
	CachedTokens     int
	Preemptions      int
	RecomputedTokens int
	Reason           FinishReason
	// ITLs are the gaps between consecutive tokens, one per token after
	// the first.
	ITLs []time.Duration
}

// TTFT is the time from arrival to the first token; false when there
// was none.
func (r *Record) TTFT() (time.Duration, bool) { return r.FirstToken - r.Arrival, r.HasFirstToken }

// TPOT is the mean time per output token after the first (vLLM's
// request_time_per_output_token), 0 with fewer than two tokens.
func (r *Record) TPOT() time.Duration {
	if r.OutputTokens < 2 {
		return 0
	}
	return (r.LastToken - r.FirstToken) / time.Duration(r.OutputTokens-1)
}

// Queue is the time from arrival to first scheduling (to the end when
// the request never ran).
func (r *Record) Queue() time.Duration {
	if !r.Scheduled {
		return r.Finish - r.Arrival
	}
	return r.FirstScheduled - r.Arrival
}

// E2E is the time from arrival to finish.
func (r *Record) E2E() time.Duration { return r.Finish - r.Arrival }

// MaxITL is the longest gap between two tokens.
func (r *Record) MaxITL() time.Duration {
	if len(r.ITLs) == 0 {
		return 0
	}
	return slices.Max(r.ITLs)
}

// Failed reports a request that ended in error or abort.
func (r *Record) Failed() bool { return r.Reason == FinishError || r.Reason == FinishAbort }

// Truth keeps finished requests in finish order, bounded by a horizon,
// and optionally writes each as a JSON line.
type Truth struct {
	recs    []Record
	horizon time.Duration
	enc     *json.Encoder
	err     error
	dropped int
}

func newTruth(o TruthOptions) *Truth {
	t := &Truth{horizon: o.Horizon}
	if o.Log != nil {
		t.enc = json.NewEncoder(o.Log)
	}
	return t
}

func (t *Truth) add(r Record, now time.Duration) {
	t.recs = append(t.recs, r)
	if t.enc != nil && t.err == nil {
		t.err = t.enc.Encode(r.jsonLine())
	}
	if t.horizon <= 0 {
		return
	}
	cut := sort.Search(len(t.recs), func(i int) bool { return t.recs[i].Finish >= now-t.horizon })
	// Compact only when half the slice is stale, to keep adds O(1).
	if cut > 0 && cut >= len(t.recs)/2 {
		n := copy(t.recs, t.recs[cut:])
		clear(t.recs[n:])
		t.recs = t.recs[:n]
		t.dropped += cut
	}
}

// Len is the number of records held.
func (t *Truth) Len() int { return len(t.recs) }

// Dropped is the number of records discarded past the horizon.
func (t *Truth) Dropped() int { return t.dropped }

// Err is the first error writing the JSON-lines log.
func (t *Truth) Err() error { return t.err }

// Records returns copies of the records that finished in [from, to).
// Records older than the horizon may be gone.
func (t *Truth) Records(from, to time.Duration) []Record {
	i, j := t.window(from, to)
	return slices.Clone(t.recs[i:j])
}

func (t *Truth) window(from, to time.Duration) (int, int) {
	i := sort.Search(len(t.recs), func(k int) bool { return t.recs[k].Finish >= from })
	j := sort.Search(len(t.recs), func(k int) bool { return t.recs[k].Finish >= to })
	return i, max(i, j)
}

type jsonRecord struct {
	ID           uint64   `json:"id"`
	Class        string   `json:"class"`
	Lever        Lever    `json:"lever"`
	Arrival      float64  `json:"arrival_s"`
	Finish       float64  `json:"finish_s"`
	TTFT         *float64 `json:"ttft_s"`
	TPOT         float64  `json:"tpot_s"`
	MaxITL       float64  `json:"itl_max_s"`
	Queue        float64  `json:"queue_s"`
	E2E          float64  `json:"e2e_s"`
	Prompt       int      `json:"prompt_tokens"`
	Output       int      `json:"output_tokens"`
	MaxTokens    int      `json:"max_tokens"`
	Cached       int      `json:"cached_tokens"`
	Preemptions  int      `json:"preemptions"`
	Recomputed   int      `json:"recomputed_tokens"`
	FinishReason string   `json:"finish_reason"`
}

func (r *Record) jsonLine() jsonRecord {
	j := jsonRecord{
		ID: r.ID, Class: r.Class, Lever: r.Lever,
		Arrival: secs(r.Arrival), Finish: secs(r.Finish),
		TPOT: secs(r.TPOT()), MaxITL: secs(r.MaxITL()), Queue: secs(r.Queue()), E2E: secs(r.E2E()),
		Prompt: r.PromptTokens, Output: r.OutputTokens, MaxTokens: r.MaxTokens, Cached: r.CachedTokens,
		Preemptions: r.Preemptions, Recomputed: r.RecomputedTokens, FinishReason: string(r.Reason),
	}
	if ttft, ok := r.TTFT(); ok {
		v := secs(ttft)
		j.TTFT = &v
	}
	return j
}
