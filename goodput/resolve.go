package goodput

import "github.com/goodput-exporter/goodput-exporter/snapshot"

// Resolution says where one objective's numbers come from for one model.
type Resolution struct {
	// Supported is false when the model cannot measure the objective (no
	// such histogram, or no finish-reason counter for the error objective).
	// An unsupported objective has no attainment, and an SLO with any
	// unsupported objective has no joint goodput.
	Supported bool
	// Hist is the histogram judged, for latency objectives.
	Hist snapshot.Hist
	// Source is the engine family behind Hist (Model.HistSource); empty for
	// the error objective or when the adapter did not name it.
	Source string
	// Fallback is set when tpot is judged from the per-token ITL histogram
	// because the model has no per-request TPOT histogram. Its judged and
	// good counts are then tokens, not requests; the caller should log it
	// once and label the series with it.
	Fallback bool
	// Unstable is set when the histogram exists but its bucket layout
	// keeps changing (more than twice in ten snapshots): Supported is then
	// false until the layout holds still.
	Unstable bool
}

// histFor maps a latency objective to the histogram that measures it.
func histFor(k Kind) (snapshot.Hist, bool) {
	switch k {
	case KindTTFT:
		return snapshot.TTFT, true
	case KindTPOT:
		return snapshot.TPOT, true
	case KindITL:
		return snapshot.ITL, true
	case KindE2E:
		return snapshot.E2E, true
	case KindQueue:
		return snapshot.QueueTime, true
	}
	return 0, false
}

// Resolve finds the data that judges objective k for model m. tpot uses the
// per-request TPOT histogram whenever the model has one, since judging a
// per-request objective on per-token observations weighs long answers more;
// only a model without it falls back to ITL, and says so.
func Resolve(m *snapshot.Model, k Kind) Resolution {
	if k == KindError {
		return Resolution{Supported: m.Finished != nil}
	}
	h, ok := histFor(k)
	if !ok {
		return Resolution{}
	}
	if m.Hists[h] != nil {
		return Resolution{Supported: true, Hist: h, Source: m.HistSource[h]}
	}
	if k == KindTPOT && m.Hists[snapshot.ITL] != nil {
		return Resolution{Supported: true, Hist: snapshot.ITL, Source: m.HistSource[snapshot.ITL], Fallback: true}
	}
	return Resolution{Hist: h}
}

// Sources of the per-interval count of finished requests that goodput
// requests are computed from, most complete coverage first.
const (
	RequestsFromE2E      = "e2e"      // one observation per finished request
	RequestsFromFinished = "finished" // finish-reason counters, all reasons
	RequestsFromTTFT     = "ttft"     // requests that produced a first token
	RequestsFromTPOT     = "tpot"     // finished requests with a TPOT observation
	RequestsFromQueue    = "queue"    // some engines observe only requests that waited
)

// requestSource picks the count of finished requests for model m: the e2e
// histogram when present, else the finish-reason counters, else the TTFT,
// TPOT or queue histogram. ITL is never used: it counts tokens. Empty when
// the model has none of them.
func requestSource(m *snapshot.Model) string {
	switch {
	case m.Hists[snapshot.E2E] != nil:
		return RequestsFromE2E
	case m.Finished != nil:
		return RequestsFromFinished
	case m.Hists[snapshot.TTFT] != nil:
		return RequestsFromTTFT
	case m.Hists[snapshot.TPOT] != nil:
		return RequestsFromTPOT
	case m.Hists[snapshot.QueueTime] != nil:
		return RequestsFromQueue
	}
	return ""
}
