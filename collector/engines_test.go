package collector

import (
	"math"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// want is one expected contract value, worked out by hand from a fixture.
type want struct {
	name string
	got  snapshot.Value
	v    float64
}

func checkValues(t *testing.T, ws []want) {
	t.Helper()
	for _, w := range ws {
		if !w.got.OK || math.Abs(w.got.V-w.v) > 1e-9*math.Max(1, math.Abs(w.v)) {
			t.Errorf("%s = %+v, want %g", w.name, w.got, w.v)
		}
	}
}

func checkAbsent(t *testing.T, m *snapshot.Model, gauges []snapshot.Gauge, counters []snapshot.Counter, hists []snapshot.Hist) {
	t.Helper()
	for _, g := range gauges {
		if m.Gauges[g].OK {
			t.Errorf("gauge %d present (%v), the engine has no such family", g, m.Gauges[g].V)
		}
	}
	for _, c := range counters {
		if m.Counters[c].OK {
			t.Errorf("counter %d present (%v), the engine has no such family", c, m.Counters[c].V)
		}
	}
	for _, h := range hists {
		if m.Hists[h] != nil {
			t.Errorf("histogram %d present, the engine has no such family", h)
		}
	}
}

// Hand-worked from tgi-v3.3-from-source.prom: batch 17 running, queue 3;
// KV reserved 21504 of 163840 tokens = 0.13125; prompt tokens are the
// input-length sum 282385, generation tokens the generated-tokens sum
// 99062; steps are the prefill and decode calls, 640 + 41210 = 41850;
// 600 successes, and of the 9 failures the 2 "overloaded" are errors while
// the 7 "validation" never ran and are left out.
func TestTGIFixtureByHand(t *testing.T) {
	s := mustParse(t, snapshot.TGI, string(readFixture(t, snapshot.TGI, "tgi-v3.3-from-source.prom")), "")
	m := s.Model("m0")
	if m == nil || len(s.Errors) != 0 {
		t.Fatalf("models %+v, errors %v", s.Models, s.Errors)
	}
	checkValues(t, []want{
		{"running", m.Gauges[snapshot.Running], 17},
		{"waiting", m.Gauges[snapshot.Waiting], 3},
		{"kv", m.Gauges[snapshot.KVCacheUsage], 0.13125},
		{"prompt", m.Counters[snapshot.PromptTokens], 282385},
		{"generation", m.Counters[snapshot.GenerationTokens], 99062},
		{"steps", m.Counters[snapshot.EngineSteps], 41850},
	})
	if len(m.Finished) != 2 || m.Finished["success"] != 600 || m.Finished["error"] != 2 {
		t.Errorf("finished %v, want success 600, error 2", m.Finished)
	}
	e2e := m.Hists[snapshot.E2E]
	if e2e == nil || len(e2e.Bounds) != 35 || e2e.Bounds[26] != 5.681512866159528 || e2e.Cumulative[26] != 400 || e2e.Count != 600 {
		t.Errorf("e2e %+v: want 35 geometric bounds, 400 at 5.68 s of 600", e2e)
	}
	tpot := m.Hists[snapshot.TPOT]
	if tpot == nil || tpot.Bounds[0] != 0.00015000000000000001 || tpot.Count != 600 || tpot.Sum != 16.934449739071574 {
		t.Errorf("tpot %+v", tpot)
	}
	if h := m.Hists[snapshot.OutputTokens]; h == nil || h.Count != 600 || h.Sum != 99062 {
		t.Errorf("output tokens %+v", h)
	}
	checkAbsent(t, m, []snapshot.Gauge{snapshot.PrefixCacheHitRatio},
		[]snapshot.Counter{snapshot.Preemptions, snapshot.PrefixCacheHits, snapshot.PrefixCacheQueries},
		[]snapshot.Hist{snapshot.TTFT, snapshot.ITL})
}

// Hand-worked from the tensorrtllm_backend README sample: active 0,
// waiting 1 (request_type="waiting", before Triton's pending count 0),
// KV fraction 0.4875, iteration counter 0, no requests yet.
func TestTritonFixtureByHand(t *testing.T) {
	s := mustParse(t, snapshot.Triton, string(readFixture(t, snapshot.Triton, "tensorrtllm_backend-readme-ifb-sample.prom")), "")
	m := s.Model("tensorrt_llm")
	if m == nil || len(s.Models) != 1 {
		t.Fatalf("models %+v", s.Models)
	}
	checkValues(t, []want{
		{"running", m.Gauges[snapshot.Running], 0},
		{"waiting", m.Gauges[snapshot.Waiting], 1},
		{"kv", m.Gauges[snapshot.KVCacheUsage], 0.4875},
		{"steps", m.Counters[snapshot.EngineSteps], 0},
	})
	if len(m.Finished) != 2 || m.Finished["success"] != 0 || m.Finished["error"] != 0 {
		t.Errorf("finished %v", m.Finished)
	}
	checkAbsent(t, m, nil,
		[]snapshot.Counter{snapshot.Preemptions, snapshot.PromptTokens, snapshot.GenerationTokens, snapshot.PrefixCacheHits},
		[]snapshot.Hist{snapshot.TTFT, snapshot.ITL, snapshot.TPOT, snapshot.E2E, snapshot.QueueTime, snapshot.OutputTokens})
}

// Two versions of one model add up; the queue falls back to Triton's
// pending count; failures by reason; the opt-in first-response histogram
// in milliseconds becomes seconds.
func TestTritonVersionsReasonsAndMilliseconds(t *testing.T) {
	body := `# TYPE nv_trt_llm_request_metrics gauge
nv_trt_llm_request_metrics{model="llama",request_type="active",version="1"} 5
nv_trt_llm_request_metrics{model="llama",request_type="active",version="2"} 2
nv_trt_llm_request_metrics{model="llama",request_type="max",version="1"} 64
# TYPE nv_inference_pending_request_count gauge
nv_inference_pending_request_count{model="llama",version="1"} 4
nv_inference_pending_request_count{model="llama",version="2"} 1
# TYPE nv_inference_request_success counter
nv_inference_request_success{model="llama",version="1"} 90
nv_inference_request_success{model="llama",version="2"} 10
# TYPE nv_inference_request_failure counter
nv_inference_request_failure{model="llama",reason="BACKEND",version="1"} 3
nv_inference_request_failure{model="llama",reason="REJECTED",version="1"} 2
nv_inference_request_failure{model="llama",reason="CANCELED",version="1"} 4
# TYPE nv_inference_first_response_histogram_ms histogram
nv_inference_first_response_histogram_ms_bucket{model="llama",version="1",le="100"} 60
nv_inference_first_response_histogram_ms_bucket{model="llama",version="1",le="500"} 95
nv_inference_first_response_histogram_ms_bucket{model="llama",version="1",le="+Inf"} 100
nv_inference_first_response_histogram_ms_sum{model="llama",version="1"} 23450
nv_inference_first_response_histogram_ms_count{model="llama",version="1"} 100
`
	s := mustParse(t, snapshot.Triton, body, "")
	m := s.Model("llama")
	if m == nil {
		t.Fatalf("models %+v", s.Models)
	}
	checkValues(t, []want{
		{"running", m.Gauges[snapshot.Running], 7},
		{"waiting", m.Gauges[snapshot.Waiting], 5},
	})
	if m.Finished["success"] != 100 || m.Finished["error"] != 5 || m.Finished["abort"] != 4 {
		t.Errorf("finished %v, want success 100, error 3+2, abort 4", m.Finished)
	}
	h := m.Hists[snapshot.TTFT]
	if h == nil || len(h.Bounds) != 2 || h.Bounds[0] != 0.1 || h.Bounds[1] != 0.5 || h.Cumulative[1] != 95 || math.Abs(h.Sum-23.45) > 1e-9 {
		t.Errorf("ttft %+v: want bounds 0.1 s and 0.5 s, sum 23.45 s", h)
	}
}

// Hand-worked from trtllm-from-source.prom.
func TestTRTLLMFixtureByHand(t *testing.T) {
	s := mustParse(t, snapshot.TRTLLM, string(readFixture(t, snapshot.TRTLLM, "trtllm-from-source.prom")), "")
	m := s.Model("Qwen/Qwen3-8B")
	if m == nil || len(s.Errors) != 0 {
		t.Fatalf("models %+v errors %v", s.Models, s.Errors)
	}
	checkValues(t, []want{
		{"running", m.Gauges[snapshot.Running], 12},
		{"waiting", m.Gauges[snapshot.Waiting], 3},
		{"kv", m.Gauges[snapshot.KVCacheUsage], 0.4375},
		{"prompt", m.Counters[snapshot.PromptTokens], 41250},
		{"generation", m.Counters[snapshot.GenerationTokens], 9120},
		{"hits", m.Counters[snapshot.PrefixCacheHits], 12800},
		{"queries", m.Counters[snapshot.PrefixCacheQueries], 41250},
	})
	if len(m.Finished) != 2 || m.Finished["stop"] != 38 || m.Finished["length"] != 2 {
		t.Errorf("finished %v", m.Finished)
	}
	if h := m.Hists[snapshot.TPOT]; h == nil || h.Count != 40 || h.Bounds[1] != 0.025 || h.Cumulative[1] != 12 {
		t.Errorf("tpot %+v: want 12 of 40 within 25 ms", h)
	}
	if h := m.Hists[snapshot.E2E]; h == nil || len(h.Bounds) != 21 || h.Bounds[7] != 5 || h.Cumulative[7] != 10 {
		t.Errorf("e2e %+v: want 10 within 5 s", h)
	}
	if h := m.Hists[snapshot.TTFT]; h == nil || len(h.Bounds) != 22 || h.Count != 40 || math.Abs(h.Sum-21.1943) > 1e-9 {
		t.Errorf("ttft %+v", h)
	}
	checkAbsent(t, m, []snapshot.Gauge{snapshot.PrefixCacheHitRatio}, []snapshot.Counter{snapshot.Preemptions, snapshot.EngineSteps},
		[]snapshot.Hist{snapshot.ITL, snapshot.OutputTokens})
}

// Versions around 1.1 wrote the per-request families without the trtllm_
// prefix; forced to trtllm they are read.
func TestTRTLLMUnprefixedWhenForced(t *testing.T) {
	body := `# TYPE request_success_total counter
request_success_total{engine_type="trtllm",finished_reason="stop",model_name="q"} 150.0
# TYPE time_to_first_token_seconds histogram
time_to_first_token_seconds_bucket{engine_type="trtllm",le="0.05",model_name="q"} 12.0
time_to_first_token_seconds_bucket{engine_type="trtllm",le="+Inf",model_name="q"} 150.0
time_to_first_token_seconds_count{engine_type="trtllm",model_name="q"} 150.0
time_to_first_token_seconds_sum{engine_type="trtllm",model_name="q"} 8.75
`
	m := mustParse(t, snapshot.TRTLLM, body, "").Model("q")
	if m == nil || m.Finished["stop"] != 150 || m.Hists[snapshot.TTFT] == nil || m.Hists[snapshot.TTFT].Cumulative[0] != 12 {
		t.Fatalf("%+v", m)
	}
}

// Hand-worked from dynamo-frontend-from-source.prom: 9 in flight of which
// 2 have no first token yet, so 7 generating; prompt tokens the input
// sum 42006, of which 2816 cached; generation tokens the streaming counter
// 13280; 27 successes, 1 cancelled (abort), 1 internal error, and the
// validation error left out.
func TestDynamoFixtureByHand(t *testing.T) {
	s := mustParse(t, snapshot.Dynamo, string(readFixture(t, snapshot.Dynamo, "dynamo-frontend-from-source.prom")), "")
	m := s.Model("Qwen/Qwen3-8B")
	if m == nil || len(s.Errors) != 0 {
		t.Fatalf("models %+v errors %v", s.Models, s.Errors)
	}
	checkValues(t, []want{
		{"running", m.Gauges[snapshot.Running], 7},
		{"waiting", m.Gauges[snapshot.Waiting], 2},
		{"prompt", m.Counters[snapshot.PromptTokens], 42006},
		{"generation", m.Counters[snapshot.GenerationTokens], 13280},
		{"hits", m.Counters[snapshot.PrefixCacheHits], 2816},
		{"queries", m.Counters[snapshot.PrefixCacheQueries], 42006},
	})
	if len(m.Finished) != 3 || m.Finished["success"] != 27 || m.Finished["abort"] != 1 || m.Finished["error"] != 1 {
		t.Errorf("finished %v", m.Finished)
	}
	// generate_log_buckets(0.001, 480, 18): 0, then exp(ln 0.001 + i/17·ln 480000) to 2 significant figures.
	if h := m.Hists[snapshot.TTFT]; h == nil || len(h.Bounds) != 18 || h.Bounds[0] != 0 || h.Bounds[1] != 0.0022 || h.Bounds[17] != 480 || h.Count != 30 {
		t.Errorf("ttft %+v", h)
	}
	if h := m.Hists[snapshot.ITL]; h == nil || len(h.Bounds) != 13 || h.Bounds[12] != 2 || h.Count != 200 {
		t.Errorf("itl %+v", h)
	}
	checkAbsent(t, m, []snapshot.Gauge{snapshot.KVCacheUsage, snapshot.PrefixCacheHitRatio},
		[]snapshot.Counter{snapshot.Preemptions, snapshot.EngineSteps}, []snapshot.Hist{snapshot.TPOT, snapshot.QueueTime})
}

// DYN_METRICS_PREFIX=nv_llm_http_service keeps the older name; older
// frontends have status without error_type, and inflight_requests only.
func TestDynamoOldPrefixAndStatusOnly(t *testing.T) {
	body := `# TYPE nv_llm_http_service_inflight_requests gauge
nv_llm_http_service_inflight_requests{model="m"} 4
# TYPE nv_llm_http_service_queued_requests gauge
nv_llm_http_service_queued_requests{model="m"} 1
# TYPE nv_llm_http_service_requests_total counter
nv_llm_http_service_requests_total{endpoint="chat_completions",model="m",request_type="stream",status="success"} 8
nv_llm_http_service_requests_total{endpoint="chat_completions",model="m",request_type="stream",status="error"} 2
`
	if e, ok := Detect([]byte(body)); !ok || e != snapshot.Dynamo {
		t.Fatalf("detected %q", e)
	}
	m := mustParse(t, snapshot.Dynamo, body, "").Model("m")
	if m == nil {
		t.Fatal("no model")
	}
	checkValues(t, []want{{"running", m.Gauges[snapshot.Running], 3}, {"waiting", m.Gauges[snapshot.Waiting], 1}})
	if m.Finished["success"] != 8 || m.Finished["error"] != 2 {
		t.Errorf("finished %v", m.Finished)
	}
}

// Real b11669 captures: prompt tokens are computed plus cached, steps are
// llama_decode calls; the 6-significant-digit value is read as printed.
func TestLlamaCPPB11669ByHand(t *testing.T) {
	for _, c := range []struct {
		file                                string
		prompt, gen, steps, running, waited float64
	}{
		{"llamacpp-b11669-0.7.0-debian-mid-long-requests.prom", 30227 + 0, 30976, 16208, 4, 0},
		{"llamacpp-b11669-0.7.0-debian-light-load.prom", 13779 + 0, 14208, 7121, 2, 0},
		{"llamacpp-b11669-0.7.0-debian-overload.prom", 46180 + 0, 47552, 17633, 4, 243},
		{"llamacpp-b11669-0.7.0-debian-counter-over-1e6.prom", 1244920 + 0, 678, 610, 0, 0},
	} {
		m := mustParse(t, snapshot.LlamaCPP, string(readFixture(t, snapshot.LlamaCPP, c.file)), "").Model("m0")
		if m == nil {
			t.Fatalf("%s: no model", c.file)
		}
		checkValues(t, []want{
			{c.file + " prompt", m.Counters[snapshot.PromptTokens], c.prompt},
			{c.file + " queries", m.Counters[snapshot.PrefixCacheQueries], c.prompt},
			{c.file + " hits", m.Counters[snapshot.PrefixCacheHits], 0},
			{c.file + " generation", m.Counters[snapshot.GenerationTokens], c.gen},
			{c.file + " steps", m.Counters[snapshot.EngineSteps], c.steps},
			{c.file + " running", m.Gauges[snapshot.Running], c.running},
			{c.file + " waiting", m.Gauges[snapshot.Waiting], c.waited},
		})
		if m.Gauges[snapshot.KVCacheUsage].OK {
			t.Errorf("%s: a KV gauge b11669 does not have", c.file)
		}
	}
}

// The repeated 1,721-token prompt seen on b11669: 1 computed, 1,720 from
// the cache. llm_prompt_tokens_total counts all 1,721, like vLLM's and
// SGLang's; an unusable cached counter takes the prompt tokens with it
// rather than letting them fall to the computed count.
func TestLlamaCPPPromptMeansAllPromptTokens(t *testing.T) {
	m := mustParse(t, snapshot.LlamaCPP, "llamacpp:prompt_tokens_total 1\nllamacpp:prompt_tokens_cached_total 1720\n", "").Model("m0")
	checkValues(t, []want{
		{"prompt", m.Counters[snapshot.PromptTokens], 1721},
		{"queries", m.Counters[snapshot.PrefixCacheQueries], 1721},
		{"hits", m.Counters[snapshot.PrefixCacheHits], 1720},
	})
	s := mustParse(t, snapshot.LlamaCPP, "llamacpp:prompt_tokens_total 1\nllamacpp:prompt_tokens_cached_total NaN\n", "")
	m = s.Model("m0")
	if m.Counters[snapshot.PromptTokens].OK || !m.CounterFailed[snapshot.PromptTokens] || len(s.Errors) != 1 {
		t.Errorf("prompt %+v failed %v errors %v", m.Counters[snapshot.PromptTokens], m.CounterFailed[snapshot.PromptTokens], s.Errors)
	}
	// An older build without the cached counter: prompt tokens as printed.
	m = mustParse(t, snapshot.LlamaCPP, "llamacpp:prompt_tokens_total 5\n", "").Model("m0")
	if !m.Counters[snapshot.PromptTokens].OK || m.Counters[snapshot.PromptTokens].V != 5 || m.Counters[snapshot.PrefixCacheQueries].OK {
		t.Errorf("%+v", m.Counters)
	}
}

// Hostile values in the new adapters' derived signals: a KV capacity of
// zero or a NaN budget gives no TGI ratio (never Inf or NaN), more queued
// than in flight on Dynamo gives 0 running (never negative), a negative
// TGI token sum gives no generation tokens, a Triton selector value the
// table does not know is ignored, and an unknown TGI err is an error.
func TestNewAdaptersHostileValues(t *testing.T) {
	m := mustParse(t, snapshot.TGI, `tgi_batch_current_max_tokens 100
tgi_batch_max_total_tokens 0
tgi_request_failure{err="exotic"} 3
tgi_request_failure{err="validation"} 9
# TYPE tgi_request_generated_tokens histogram
tgi_request_generated_tokens_bucket{le="10"} 1
tgi_request_generated_tokens_bucket{le="+Inf"} 1
tgi_request_generated_tokens_sum -5
tgi_request_generated_tokens_count 1
`, "").Model("m0")
	if m.Gauges[snapshot.KVCacheUsage].OK || m.Counters[snapshot.GenerationTokens].OK || m.Finished["error"] != 3 || len(m.Finished) != 1 {
		t.Errorf("tgi: kv %+v, generation %+v, finished %v", m.Gauges[snapshot.KVCacheUsage], m.Counters[snapshot.GenerationTokens], m.Finished)
	}
	m = mustParse(t, snapshot.TGI, "tgi_batch_current_max_tokens NaN\ntgi_batch_max_total_tokens 10\ntgi_queue_size 1\n", "").Model("m0")
	if m.Gauges[snapshot.KVCacheUsage].OK {
		t.Errorf("tgi: a NaN budget gave kv %+v", m.Gauges[snapshot.KVCacheUsage])
	}
	m = mustParse(t, snapshot.Dynamo, "dynamo_frontend_inflight_requests{model=\"a\"} 1\ndynamo_frontend_queued_requests{model=\"a\"} 5\n", "").Model("a")
	if r := m.Gauges[snapshot.Running]; !r.OK || r.V != 0 {
		t.Errorf("dynamo: running %+v with more queued than in flight", r)
	}
	m = mustParse(t, snapshot.Triton, `nv_trt_llm_request_metrics{model="x",request_type="someday",version="1"} 9
nv_trt_llm_request_metrics{model="x",request_type="active",version="1"} 2
nv_trt_llm_request_metrics{model="x",version="1"} 7
`, "").Model("x")
	if r := m.Gauges[snapshot.Running]; !r.OK || r.V != 2 || m.Gauges[snapshot.Waiting].OK {
		t.Errorf("triton: running %+v waiting %+v", r, m.Gauges[snapshot.Waiting])
	}
}
