package goodput

import (
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// req is one finished request as the simulator's ground truth would log it.
type req struct {
	ttft, tpot, e2e, queue float64
	tokens                 int    // generation tokens; tokens−1 ITL observations of tpot
	reason                 string // finish reason, "stop" when empty
}

// engineModel renders the cumulative metrics a vLLM V1 engine would expose
// after serving reqs. has selects the histograms the engine has; finished
// selects the finish-reason counters.
type engineModel struct {
	name     string
	has      [snapshot.NumHists]bool
	finished bool
	tokens   bool
}

func vllmLike(name string) engineModel {
	return engineModel{name: name, has: [snapshot.NumHists]bool{true, true, true, true, true}, finished: true, tokens: true}
}

func sources() [snapshot.NumHists]string {
	return [snapshot.NumHists]string{
		snapshot.TTFT:      "vllm:time_to_first_token_seconds",
		snapshot.ITL:       "vllm:inter_token_latency_seconds",
		snapshot.TPOT:      "vllm:request_time_per_output_token_seconds",
		snapshot.E2E:       "vllm:e2e_request_latency_seconds",
		snapshot.QueueTime: "vllm:request_queue_time_seconds",
	}
}

func (e engineModel) render(reqs []req) snapshot.Model {
	m := snapshot.Model{Name: e.name, HistSource: sources()}
	var ttft, tpot, itl, e2e, queue []float64
	finished := map[string]float64{}
	tokens := 0.0
	for _, r := range reqs {
		ttft = append(ttft, r.ttft)
		tpot = append(tpot, r.tpot)
		e2e = append(e2e, r.e2e)
		queue = append(queue, r.queue)
		for range r.tokens - 1 {
			itl = append(itl, r.tpot)
		}
		reason := r.reason
		if reason == "" {
			reason = "stop"
		}
		finished[reason]++
		tokens += float64(r.tokens)
	}
	obs := [snapshot.NumHists][]float64{snapshot.TTFT: ttft, snapshot.ITL: itl, snapshot.TPOT: tpot, snapshot.E2E: e2e, snapshot.QueueTime: queue}
	bounds := [snapshot.NumHists][]float64{ttftBounds(), interTokenBounds(), interTokenBounds(), requestBounds(), requestBounds()}
	for h := range m.Hists {
		if e.has[h] {
			m.Hists[h] = histOf(bounds[h], obs[h]...)
		} else {
			m.HistSource[h] = ""
		}
	}
	if e.finished {
		m.Finished = finished
	}
	if e.tokens {
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: tokens, OK: true}
	}
	return m
}

// snap assembles a snapshot; models must be given sorted by name.
func snap(target string, models ...snapshot.Model) *snapshot.Snapshot {
	return &snapshot.Snapshot{Target: target, Engine: snapshot.VLLM, Time: time.Unix(1_700_000_000, 0), Models: models}
}

// same returns n requests that all look like r.
func same(r req, n int) []req {
	out := make([]req, n)
	for i := range out {
		out[i] = r
	}
	return out
}

func concat(parts ...[]req) []req {
	var out []req
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
