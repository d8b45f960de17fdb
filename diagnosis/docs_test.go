package diagnosis

import (
	"os"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// engineSnapshot has every contract series the engine can expose
// (collector.Support), as the richest version of it would.
func engineSnapshot(e snapshot.Engine) *snapshot.Snapshot {
	sup := collector.Support(e)
	m := snapshot.Model{Name: "m"}
	h := func() *snapshot.Histogram { return &snapshot.Histogram{Bounds: []float64{1}, Cumulative: []float64{0}} }
	set := map[string]func(){
		"llm_requests_running":                      func() { m.Gauges[snapshot.Running].OK = true },
		"llm_requests_waiting":                      func() { m.Gauges[snapshot.Waiting].OK = true },
		"llm_kv_cache_usage_ratio":                  func() { m.Gauges[snapshot.KVCacheUsage].OK = true },
		"llm_prefix_cache_hit_ratio":                func() { m.Gauges[snapshot.PrefixCacheHitRatio].OK = true },
		"llm_preemptions_total":                     func() { m.Counters[snapshot.Preemptions].OK = true },
		"llm_prompt_tokens_total":                   func() { m.Counters[snapshot.PromptTokens].OK = true },
		"llm_generation_tokens_total":               func() { m.Counters[snapshot.GenerationTokens].OK = true },
		"llm_prefix_cache_queries_total":            func() { m.Counters[snapshot.PrefixCacheQueries].OK = true },
		"llm_prefix_cache_hits_total":               func() { m.Counters[snapshot.PrefixCacheHits].OK = true },
		"llm_engine_steps_total":                    func() { m.Counters[snapshot.EngineSteps].OK = true },
		"llm_requests_finished_total":               func() { m.Finished = map[string]float64{} },
		"llm_time_to_first_token_seconds":           func() { m.Hists[snapshot.TTFT] = h() },
		"llm_inter_token_latency_seconds":           func() { m.Hists[snapshot.ITL] = h() },
		"llm_request_time_per_output_token_seconds": func() { m.Hists[snapshot.TPOT] = h() },
		"llm_e2e_request_latency_seconds":           func() { m.Hists[snapshot.E2E] = h() },
		"llm_request_queue_time_seconds":            func() { m.Hists[snapshot.QueueTime] = h() },
	}
	for name, ok := range sup {
		if ok && set[name] != nil {
			set[name]()
		}
	}
	return &snapshot.Snapshot{Engine: e, Models: []snapshot.Model{m}}
}

// The support table of docs/failure-modes.md says what support()
// decides for each engine's full set of series (GPU series present).
func TestDocsFailureModeSupport(t *testing.T) {
	raw, err := os.ReadFile("../docs/failure-modes.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "| mode | vLLM | SGLang | llama.cpp | TGI | Triton TRT-LLM | trtllm-serve | Dynamo | GPU backend needed |")
	if !ok {
		t.Fatal("docs/failure-modes.md has no failure-mode support table")
	}
	withGPU := Signals{GPUThrottledShare: some(0)}
	rows := 0
	for _, line := range strings.Split(after, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		mode, ok := ParseMode(strings.Trim(strings.TrimSpace(cells[0]), "`"))
		if !ok {
			t.Fatalf("docs/failure-modes.md: row %q names no mode", cells[0])
		}
		for i, e := range snapshot.Engines {
			want := len(support(engineSnapshot(e), nil, withGPU)[mode]) == 0
			got := strings.HasPrefix(strings.TrimSpace(cells[i+1]), "✓")
			if got != want {
				t.Errorf("docs/failure-modes.md says %s on %s is %v, the code says %v", mode, e, got, want)
			}
		}
		needGPU := strings.HasPrefix(strings.TrimSpace(cells[len(snapshot.Engines)+1]), "yes")
		if noGPU := len(support(engineSnapshot(snapshot.VLLM), nil, Signals{})[mode]) > 0; noGPU != needGPU {
			t.Errorf("docs/failure-modes.md says %s needs a GPU backend: %v, the code says %v", mode, needGPU, noGPU)
		}
		rows++
	}
	if rows != int(NumModes) {
		t.Errorf("docs/failure-modes.md lists %d modes, want %d", rows, NumModes)
	}
}
