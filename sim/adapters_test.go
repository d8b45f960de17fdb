package sim_test

import (
	"bytes"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func simulated(t *testing.T) *sim.Engine {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Engine.TokenHistograms = true // SGLang's optional token histograms too
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.AdvanceTo(90 * time.Second)
	return e
}

// The daemon's own adapters read every exposition the simulator writes,
// detect the right engine, find no family to reject, and get every signal
// the engine is declared to support (llama.cpp's KV gauge aside: the
// simulated build is a current one, after its removal).
func TestAdaptersReadTheSimulator(t *testing.T) {
	e := simulated(t)
	for _, c := range []struct {
		format sim.Format
		engine snapshot.Engine
	}{{sim.FormatVLLM, snapshot.VLLM}, {sim.FormatSGLang, snapshot.SGLang}, {sim.FormatLlamaCPP, snapshot.LlamaCPP},
		{sim.FormatTGI, snapshot.TGI}, {sim.FormatTriton, snapshot.Triton}, {sim.FormatTRTLLM, snapshot.TRTLLM}, {sim.FormatDynamo, snapshot.Dynamo}} {
		t.Run(string(c.format), func(t *testing.T) {
			var buf bytes.Buffer
			if err := e.WriteMetrics(&buf, c.format); err != nil {
				t.Fatal(err)
			}
			if got, ok := collector.Detect(buf.Bytes()); !ok || got != c.engine {
				t.Fatalf("detected %q", got)
			}
			p, _ := collector.NewParser(c.engine, collector.ParseOptions{DefaultModel: "m"})
			s, err := p.Parse(buf.Bytes(), sim.ContentType, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Errors) > 0 || len(s.Models) != 1 {
				t.Fatalf("models %d, family errors %v", len(s.Models), s.Errors)
			}
			present := presentSeries(&s.Models[0])
			otherVersions := map[snapshot.Engine]string{
				snapshot.VLLM:     "llm_prefix_cache_hit_ratio", // a V0 gauge; the simulator is V1
				snapshot.LlamaCPP: "llm_kv_cache_usage_ratio",   // removed in 2025; the simulator is a current build
			}
			for name, supported := range collector.Support(c.engine) {
				if supported && !present[name] && otherVersions[c.engine] != name {
					t.Errorf("%s is supported for %s but missing from the simulator's output", name, c.engine)
				}
			}
			if g := s.Models[0].Counters[snapshot.GenerationTokens]; collector.Support(c.engine)["llm_generation_tokens_total"] && (!g.OK || g.V == 0) {
				t.Errorf("no generation tokens after 90 s of traffic: %+v", g)
			}
		})
	}
	t.Run("dcgm-exporter", func(t *testing.T) {
		var buf bytes.Buffer
		if err := e.WriteGPUMetrics(&buf); err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(buf.Bytes()) }))
		defer srv.Close()
		b, err := gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		devs, err := b.Collect(context.Background())
		if err != nil || len(devs) != 1 {
			t.Fatalf("devices %v, err %v", devs, err)
		}
		d := devs[0]
		if d.Err != nil || !d.PowerW.OK || d.PowerW.V <= 0 || !d.EnergyJ.OK || !d.SMClockHz.OK {
			t.Errorf("GPU read incompletely: %+v", d)
		}
	})
}

func presentSeries(m *snapshot.Model) map[string]bool {
	names := map[string]bool{}
	gauges := []string{"llm_requests_running", "llm_requests_waiting", "llm_kv_cache_usage_ratio", "llm_prefix_cache_hit_ratio"}
	counters := []string{"llm_preemptions_total", "llm_prompt_tokens_total", "llm_generation_tokens_total", "llm_prefix_cache_queries_total", "llm_prefix_cache_hits_total", "llm_engine_steps_total"}
	hists := []string{"llm_time_to_first_token_seconds", "llm_inter_token_latency_seconds", "llm_request_time_per_output_token_seconds", "llm_e2e_request_latency_seconds", "llm_request_queue_time_seconds", "llm_request_generation_tokens"}
	for i, v := range m.Gauges {
		names[gauges[i]] = v.OK
	}
	for i, v := range m.Counters {
		names[counters[i]] = v.OK
	}
	for i, h := range m.Hists {
		names[hists[i]] = h != nil
	}
	names["llm_requests_finished_total"] = m.Finished != nil
	return names
}

// promtool finds nothing in the simulator's output that it does not also
// find in the real captures of the same engine (vLLM's colons, for one).
func TestPromtoolSeesWhatItSeesInRealCaptures(t *testing.T) {
	bin := promtool.Path(t)
	e := simulated(t)
	captures := map[string]string{
		"vllm":     "../collector/testdata/fixtures/vllm/*.prom",
		"sglang":   "../collector/testdata/fixtures/sglang/*.prom",
		"llamacpp": "../collector/testdata/fixtures/llamacpp/*.prom",
		"tgi":      "../collector/testdata/fixtures/tgi/*.prom",
		"triton":   "../collector/testdata/fixtures/triton/*.prom",
		"trtllm":   "../collector/testdata/fixtures/trtllm/*.prom",
		"dynamo":   "../collector/testdata/fixtures/dynamo/*.prom",
		"dcgm":     "../collector/gpu/testdata/dcgm-exporter/*.prom",
	}
	for kind, glob := range captures {
		t.Run(kind, func(t *testing.T) {
			allowed := map[string]bool{}
			files, _ := filepath.Glob(glob)
			for _, f := range files {
				body, _ := os.ReadFile(f)
				for k := range complaints(t, bin, body) {
					allowed[k] = true
				}
			}
			if kind == "triton" {
				// Triton names its opt-in latency histogram so
				// (nv_inference_first_response_histogram_ms); the README
				// sample at hand has it off.
				allowed["metric name should not include type 'histogram'"] = true
			}
			if kind == "sglang" {
				// SGLang names its optional token histograms so
				// (sglang:generation_tokens_histogram in collector.py);
				// no capture at hand has them enabled.
				allowed["metric name should not include type 'histogram'"] = true
			}
			var buf bytes.Buffer
			if kind == "dcgm" {
				e.WriteGPUMetrics(&buf)
			} else {
				e.WriteMetrics(&buf, sim.Format(kind))
			}
			for k, example := range complaints(t, bin, buf.Bytes()) {
				if !allowed[k] {
					t.Errorf("promtool: %q (e.g. %s) is not found in any real %s capture", k, example, kind)
				}
			}
		})
	}
}

// complaints maps each kind of promtool complaint to one metric it was
// made about.
func complaints(t *testing.T, bin string, body []byte) map[string]string {
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	out, _ := cmd.CombinedOutput()
	kinds := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, msg, ok := strings.Cut(line, " "); ok {
			kinds[msg] = name
		} else if line != "" {
			kinds[line] = ""
		}
	}
	return kinds
}

// The new formats expose the same simulated engine: what the adapters
// read from each equals what the simulator's per-request truth and state
// say, worked out here from the records, not from the exposition code.
func TestNewFormatsAgreeWithTheTruth(t *testing.T) {
	e := simulated(t)
	if e.Truth().Dropped() > 0 {
		t.Fatal("truth dropped records")
	}
	recs := e.Truth().Records(0, time.Duration(1<<62))
	var okReqs, errs, aborts, okOut, allOut, allPrompt, allCached, ranPrompt, ranCached float64
	for _, r := range recs {
		if r.HasFirstToken {
			ranPrompt += float64(r.PromptTokens)
			ranCached += float64(r.CachedTokens)
		}
		switch r.Reason {
		case sim.FinishError:
			errs++
		case sim.FinishAbort:
			aborts++
		default:
			okReqs++
			okOut += float64(r.OutputTokens)
		}
		allOut += float64(r.OutputTokens)
		allPrompt += float64(r.PromptTokens)
		allCached += float64(r.CachedTokens)
	}
	st := e.State()
	read := func(f sim.Format, en snapshot.Engine) *snapshot.Model {
		var buf bytes.Buffer
		if err := e.WriteMetrics(&buf, f); err != nil {
			t.Fatal(err)
		}
		p, _ := collector.NewParser(en, collector.ParseOptions{DefaultModel: "m"})
		s, err := p.Parse(buf.Bytes(), sim.ContentType, time.Now())
		if err != nil || len(s.Models) != 1 {
			t.Fatalf("%s: %v %v", f, err, s)
		}
		return &s.Models[0]
	}
	eq := func(what string, got snapshot.Value, want float64) {
		t.Helper()
		if !got.OK || math.Abs(got.V-want) > 1e-6*math.Max(1, want) {
			t.Errorf("%s: %+v, the truth says %v", what, got, want)
		}
	}
	m := read(sim.FormatTGI, snapshot.TGI)
	eq("tgi generation tokens (successful requests)", m.Counters[snapshot.GenerationTokens], okOut)
	eq("tgi prompt tokens", m.Counters[snapshot.PromptTokens], allPrompt)
	eq("tgi running", m.Gauges[snapshot.Running], float64(st.Running))
	eq("tgi waiting", m.Gauges[snapshot.Waiting], float64(st.Waiting))
	if m.Finished["success"] != okReqs || m.Finished["error"] != errs || m.Finished["abort"] != aborts {
		t.Errorf("tgi finished %v, truth %v ok %v errors %v aborts", m.Finished, okReqs, errs, aborts)
	}
	if h := m.Hists[snapshot.E2E]; h == nil || h.Count != okReqs {
		t.Errorf("tgi e2e %+v: one observation per successful request (%v)", h, okReqs)
	}
	m = read(sim.FormatTriton, snapshot.Triton)
	eq("triton running", m.Gauges[snapshot.Running], float64(st.Running))
	eq("triton kv", m.Gauges[snapshot.KVCacheUsage], st.KVUsage)
	if m.Finished["success"] != okReqs || m.Finished["error"] != errs || m.Finished["abort"] != aborts {
		t.Errorf("triton finished %v", m.Finished)
	}
	m = read(sim.FormatTRTLLM, snapshot.TRTLLM)
	eq("trtllm prompt tokens (finished requests that ran)", m.Counters[snapshot.PromptTokens], ranPrompt)
	eq("trtllm generation tokens (finished requests)", m.Counters[snapshot.GenerationTokens], allOut)
	eq("trtllm cached tokens", m.Counters[snapshot.PrefixCacheHits], ranCached)
	if h := m.Hists[snapshot.TPOT]; h == nil || h.Count != float64(len(recs)) {
		t.Errorf("trtllm tpot %+v: one observation per finished request (%d)", h, len(recs))
	}
	m = read(sim.FormatDynamo, snapshot.Dynamo)
	eq("dynamo generation tokens (streamed)", m.Counters[snapshot.GenerationTokens], float64(st.Counters.GenerationTokens))
	eq("dynamo prompt tokens (at first token)", m.Counters[snapshot.PromptTokens], float64(st.Counters.PromptTokens))
	eq("dynamo in flight", snapshot.Value{V: m.Gauges[snapshot.Running].V + m.Gauges[snapshot.Waiting].V, OK: true}, float64(st.Running+st.Waiting))
	if h := m.Hists[snapshot.E2E]; h == nil || h.Count != float64(len(recs)) {
		t.Errorf("dynamo e2e %+v", h)
	}
}
