package collector

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func mustParse(t *testing.T, e snapshot.Engine, body, ct string) *snapshot.Snapshot {
	t.Helper()
	p, err := NewParser(e, ParseOptions{DefaultModel: "m0", ModelLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Parse([]byte(body), ct, time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readFixture(t *testing.T, e snapshot.Engine, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "fixtures", string(e), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The values below were added up by hand from the lines of
// v1-latest-from-source.prom (two data-parallel engines).
func TestVLLMDataParallelRanksCombine(t *testing.T) {
	s := mustParse(t, snapshot.VLLM, string(readFixture(t, snapshot.VLLM, "v1-latest-from-source.prom")), "")
	m := s.Model("meta-llama/Llama-3.1-8B-Instruct")
	if m == nil || len(s.Models) != 1 {
		t.Fatalf("models: %+v", s.Models)
	}
	checks := []struct {
		name string
		got  snapshot.Value
		want float64
	}{
		{"running 14+9", m.Gauges[snapshot.Running], 23},
		{"waiting 3+0", m.Gauges[snapshot.Waiting], 3},
		{"kv fullest rank", m.Gauges[snapshot.KVCacheUsage], 0.6213},
		{"preemptions 60+58", m.Counters[snapshot.Preemptions], 118},
		{"generation 343899+310221", m.Counters[snapshot.GenerationTokens], 654120},
	}
	for _, c := range checks {
		if !c.got.OK || c.got.V != c.want {
			t.Errorf("%s: got %+v, want %g", c.name, c.got, c.want)
		}
	}
	if got := m.Finished["stop"]; got != 987+903 {
		t.Errorf("stop: %g", got)
	}
	if got := m.Finished["error"]; got != 8+14 {
		t.Errorf("error: %g", got)
	}
	if m.Gauges[snapshot.PrefixCacheHitRatio].OK {
		t.Error("V1 has no prefix hit-rate gauge; it must stay absent")
	}
	if m.HistSource[snapshot.ITL] != "vllm:inter_token_latency_seconds" {
		t.Errorf("ITL source %q: the current name must win over the deprecated one", m.HistSource[snapshot.ITL])
	}
}

func TestLlamaCPPLacksSignalsRatherThanZero(t *testing.T) {
	s := mustParse(t, snapshot.LlamaCPP, string(readFixture(t, snapshot.LlamaCPP, "server-cuda-2026-lfm2.5-8b.prom")), "")
	m := s.Model("m0")
	if m == nil {
		t.Fatalf("llama.cpp series must take the configured model name: %+v", s.Models)
	}
	if m.Gauges[snapshot.KVCacheUsage].OK || m.Counters[snapshot.Preemptions].OK || m.Finished != nil {
		t.Error("signals llama.cpp does not expose must be absent")
	}
	for h := range snapshot.NumHists {
		if m.Hists[h] != nil {
			t.Errorf("hist %d present for llama.cpp", h)
		}
	}
	if v := m.Counters[snapshot.GenerationTokens]; !v.OK || v.V != 10911 {
		t.Errorf("tokens_predicted_total: %+v", v)
	}
	sup := Support(snapshot.LlamaCPP)
	if sup["llm_time_to_first_token_seconds"] || !sup["llm_generation_tokens_total"] {
		t.Errorf("support matrix wrong: %v", sup)
	}
}

func TestSGLangOldNameLabelAndRetractions(t *testing.T) {
	s := mustParse(t, snapshot.SGLang, string(readFixture(t, snapshot.SGLang, "pr1853-2024-11-v0.3-excerpt.prom")), "")
	if len(s.Models) != 1 || !strings.HasPrefix(s.Models[0].Name, "/shared/public/elr-models/meta-llama/Llama-3.2-3B") {
		t.Fatalf("v0.3 label name must give the model: %+v", s.Models)
	}
	s = mustParse(t, snapshot.SGLang, string(readFixture(t, snapshot.SGLang, "sglang-from-source.prom")), "")
	m := s.Model("meta-llama/Llama-3.1-8B-Instruct")
	if v := m.Counters[snapshot.Preemptions]; !v.OK || v.V != 44 {
		t.Errorf("retractions as preemptions: %+v", v)
	}
	if q, h := m.Counters[snapshot.PrefixCacheQueries], m.Counters[snapshot.PrefixCacheHits]; q.V != 643745 || h.V != 221393 {
		t.Errorf("prefix cache from prompt/cached tokens: %+v %+v", q, h)
	}
}

const twoModels = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="a"} 2
vllm:num_requests_running{engine="0",model_name="b"} 5
vllm:num_requests_running{engine="1",model_name="a"} 1
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="a"} 10
vllm:generation_tokens_total{engine="0",model_name="b"} 20
`

func TestSeveralModelsStayApart(t *testing.T) {
	s := mustParse(t, snapshot.VLLM, twoModels, "")
	if len(s.Models) != 2 || s.Models[0].Name != "a" || s.Models[1].Name != "b" {
		t.Fatalf("models: %+v", s.Models)
	}
	if s.Models[0].Gauges[snapshot.Running].V != 3 || s.Models[1].Gauges[snapshot.Running].V != 5 {
		t.Errorf("running: %+v %+v", s.Models[0].Gauges, s.Models[1].Gauges)
	}
}

func TestModelLimit(t *testing.T) {
	p, _ := NewParser(snapshot.VLLM, ParseOptions{ModelLimit: 1})
	s, err := p.Parse([]byte(twoModels), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Models) != 1 || len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Error(), "model_limit") {
		t.Fatalf("models %d errors %v", len(s.Models), s.Errors)
	}
}

func TestBadValuesAreFamilyErrors(t *testing.T) {
	body := `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} NaN
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="a"} -3
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="a"} 7
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="1",model_name="a"} 5
vllm:e2e_request_latency_seconds_bucket{le="2",model_name="a"} 4
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="a"} 6
vllm:e2e_request_latency_seconds_sum{model_name="a"} 3
vllm:e2e_request_latency_seconds_count{model_name="a"} 6
`
	s := mustParse(t, snapshot.VLLM, body, "")
	m := s.Model("a")
	if m.Gauges[snapshot.Running].OK || m.Counters[snapshot.GenerationTokens].OK || m.Hists[snapshot.E2E] != nil {
		t.Errorf("bad families must be left out: %+v", m)
	}
	if !m.Counters[snapshot.PromptTokens].OK {
		t.Error("the good family must stay")
	}
	if len(s.Errors) != 3 {
		t.Errorf("want 3 family errors, got %v", s.Errors)
	}
	var fe *FamilyError
	if !errors.As(s.Errors[0], &fe) || fe.Model != "a" {
		t.Errorf("error type: %#v", s.Errors[0])
	}
}

func TestMalformedBodyIsAnError(t *testing.T) {
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	_, err := p.Parse([]byte("vllm:num_requests_running{model_name=\"a\"} 1\n<html>oops</html>\n"), "", time.Now())
	if err == nil || !strings.Contains(err.Error(), "after series vllm:num_requests_running") {
		t.Fatalf("err = %v", err)
	}
}

// A body in OpenMetrics 1.0 must give the same snapshot as the same data in
// the classic text format.
func TestOpenMetricsMatchesText(t *testing.T) {
	text := readFixture(t, snapshot.VLLM, "v1-kops-conformance-2026-03-qwen2.5-0.5b.prom")
	om := toOpenMetrics(t, text)
	if !bytes.HasSuffix(om, []byte("# EOF\n")) {
		t.Fatal("not OpenMetrics")
	}
	a := mustParse(t, snapshot.VLLM, string(text), "text/plain; version=0.0.4")
	b := mustParse(t, snapshot.VLLM, string(om), "application/openmetrics-text; version=1.0.0; charset=utf-8")
	if len(a.Models) != 1 || !equalModels(a.Models[0], b.Models[0]) {
		t.Fatalf("text %+v\nopenmetrics %+v", a.Models, b.Models)
	}
	if a.ProcessStart == 0 || a.ProcessStart != b.ProcessStart {
		t.Errorf("process start %v %v", a.ProcessStart, b.ProcessStart)
	}
}

func toOpenMetrics(t *testing.T, text []byte) []byte {
	t.Helper()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		c.Close()
	}
	return buf.Bytes()
}

func equalModels(a, b snapshot.Model) bool {
	if a.Name != b.Name || a.Gauges != b.Gauges || a.Counters != b.Counters || len(a.Finished) != len(b.Finished) {
		return false
	}
	for k, v := range a.Finished {
		if b.Finished[k] != v {
			return false
		}
	}
	for h := range snapshot.NumHists {
		x, y := a.Hists[h], b.Hists[h]
		if (x == nil) != (y == nil) || x != nil && (!x.SameLayout(y) || x.Count != y.Count || math.Abs(x.Sum-y.Sum) > 1e-9) {
			return false
		}
	}
	return true
}

func TestDetect(t *testing.T) {
	for e, files := range fixtures(t) {
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if got, ok := Detect(b); !ok || got != e {
				t.Errorf("%s: detected %q %v", f, got, ok)
			}
		}
	}
	if _, ok := Detect([]byte("# HELP go_goroutines x\ngo_goroutines 3\n")); ok {
		t.Error("a body with no engine prefix must not be detected")
	}
}

// A bad bucket bound is reported on every parse, not only the first; and a
// body that fails to parse leaves nothing behind in the series cache.
func TestBadBoundReportedEveryTimeAndFailedParsesForgotten(t *testing.T) {
	body := []byte(`# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="soon",model_name="a"} 1
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="a"} 1
vllm:e2e_request_latency_seconds_sum{model_name="a"} 1
vllm:e2e_request_latency_seconds_count{model_name="a"} 1
`)
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	for i := range 2 {
		s, err := p.Parse(body, "", time.Now())
		if err != nil || len(s.Errors) != 1 || !strings.Contains(s.Errors[0].Error(), `le="soon"`) {
			t.Fatalf("parse %d: %v %v", i, err, s.Errors)
		}
	}
	before := len(p.cache)
	garbage := []byte("vllm:x{a=\"1\"} 1\nvllm:y{a=\"2\"} 2\n<html>\n")
	for range 3 {
		if _, err := p.Parse(garbage, "", time.Now()); err == nil {
			t.Fatal("garbage parsed")
		}
	}
	if len(p.cache) != before {
		t.Errorf("failed parses grew the cache from %d to %d series", before, len(p.cache))
	}
}
