package collector

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// scrapeBody serves body once to a scraper of engine e ("" detects).
func scrapeBody(t *testing.T, e snapshot.Engine, body []byte) (*snapshot.Snapshot, Result, error) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	return newTestScraper(t, srv.URL, e, time.Second, 32<<20).Scrape(context.Background())
}

func scrapeReason(err error) string {
	var se *ScrapeError
	if errors.As(err, &se) {
		return se.Reason
	}
	return ""
}

// Every real capture, read by a target configured for each engine: its
// own engine's target is up; another engine's target whose families the
// body does not hold is down, as wrong_engine (naming the engine found)
// or no_families, never up with nothing read. Whether the body holds the
// configured engine's families is derived apart from the code under test:
// a line starting with one of the engine's prefixes (or its TYPE line).
func TestCapturesOfAnotherEngineAreNotUp(t *testing.T) {
	engines := []snapshot.Engine{snapshot.VLLM, snapshot.SGLang, snapshot.LlamaCPP, snapshot.TGI, snapshot.Triton, snapshot.TRTLLM, snapshot.Dynamo}
	prefixes := map[snapshot.Engine]*regexp.Regexp{
		snapshot.VLLM:     regexp.MustCompile(`(?m)^(# TYPE )?vllm:`),
		snapshot.SGLang:   regexp.MustCompile(`(?m)^(# TYPE )?sglang[:_]`),
		snapshot.LlamaCPP: regexp.MustCompile(`(?m)^(# TYPE )?llamacpp:`),
		snapshot.TGI:      regexp.MustCompile(`(?m)^(# TYPE )?tgi_`),
		snapshot.Triton:   regexp.MustCompile(`(?m)^(# TYPE )?nv_(inference|trt_llm)_`),
		snapshot.TRTLLM:   regexp.MustCompile(`(?m)^(# TYPE )?trtllm[:_]`),
		snapshot.Dynamo:   regexp.MustCompile(`(?m)^(# TYPE )?(dynamo_frontend|nv_llm_http_service)_`),
	}
	files, _ := filepath.Glob("testdata/fixtures/*/*.prom")
	if len(files) < 25 {
		t.Fatalf("%d captures found", len(files))
	}
	down := 0
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		own := snapshot.Engine(filepath.Base(filepath.Dir(f)))
		for _, e := range engines {
			snap, _, err := scrapeBody(t, e, body)
			switch {
			case e == own:
				if err != nil {
					t.Errorf("%s read as %s: %v, want up", f, e, err)
				}
			case prefixes[e].Match(body):
				// Holds the engine's families (a re-export, a sidecar): up is honest.
			default:
				down++
				reason := scrapeReason(err)
				if snap != nil || (reason != ReasonWrongEngine && reason != ReasonNoFamilies) {
					t.Errorf("%s read as %s: up %v, %v; want down as wrong_engine or no_families", f, e, snap != nil, err)
					continue
				}
				if found, ok := Detect(body); reason == ReasonWrongEngine && (!ok || !strings.Contains(err.Error(), string(found))) {
					t.Errorf("%s read as %s: %v does not name the engine found", f, e, err)
				}
			}
		}
	}
	if down < 100 {
		t.Errorf("only %d (capture, other engine) pairs judged", down)
	}
}

// A Ray Serve deployment prefixes vLLM's families with ray_: a target
// configured as vLLM reads none of them and is down as no_families, where
// it was up with no series.
func TestRayServePrefixIsNoFamilies(t *testing.T) {
	body := regexp.MustCompile(`(?m)^(# (TYPE|HELP) )?vllm:`).ReplaceAll(readFixture(t, snapshot.VLLM, "v1-latest-from-source.prom"), []byte("${1}ray_vllm:"))
	if bytes.Contains(body, []byte("\nvllm:")) {
		t.Fatal("the prefix was not replaced")
	}
	snap, _, err := scrapeBody(t, snapshot.VLLM, body)
	if snap != nil || scrapeReason(err) != ReasonNoFamilies || !strings.Contains(err.Error(), "ray_vllm:") {
		t.Errorf("ray_vllm: body read as vllm: up %v, %v; want down as no_families", snap != nil, err)
	}
	if _, _, err := scrapeBody(t, "", body); scrapeReason(err) != ReasonUnknownEngine {
		t.Errorf("detected: %v, want unknown_engine", err)
	}
}

// An engine that is up but idle shows its families' TYPE lines with no
// sample: it stays up, with no model.
func TestIdleEngineWithOnlyTypeLinesIsUp(t *testing.T) {
	body := []byte("# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
	if snap, _, err := scrapeBody(t, snapshot.VLLM, body); err != nil || snap == nil || len(snap.Models) != 0 {
		t.Errorf("idle vllm: %v, want up with no model", err)
	}
}

// One stray line of an engine's prefix does not decide the engine: the
// real dcgm-exporter capture with one trtllm_ sample appended (a worker
// re-exporting one gauge) is not detected as TRT-LLM; two lines are.
func TestOneLineDoesNotDetectAnEngine(t *testing.T) {
	base, err := os.ReadFile("gpu/testdata/dcgm-exporter/kops-conformance-2026-03-L4-default-counters.prom")
	if err != nil {
		t.Fatal(err)
	}
	one := append(bytes.Clone(base), "trtllm_kv_cache_hit_rate{engine_type=\"trtllm\",model_name=\"q\"} 0.5\n"...)
	if e, ok := Detect(one); ok {
		t.Errorf("one trtllm_ line detected %q", e)
	}
	if _, _, err := scrapeBody(t, "", one); scrapeReason(err) != ReasonUnknownEngine {
		t.Errorf("scraped in auto mode: %v, want unknown_engine", err)
	}
	two := append(bytes.Clone(one), "trtllm_kv_cache_utilization{engine_type=\"trtllm\",model_name=\"q\"} 0.25\n"...)
	if e, ok := Detect(two); !ok || e != snapshot.TRTLLM {
		t.Errorf("two trtllm_ lines detected %q %v, want trtllm", e, ok)
	}
}

// A goodput-exporter's own /metrics (its own, through a target naming it,
// or another daemon's) is refused as self_scrape, configured engine or
// not, even though it holds llm_ series and engine names in its HELP.
func TestSelfScrapeIsRefused(t *testing.T) {
	body, err := os.ReadFile("../cmd/exporter/testdata/e2e-output.prom")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte("\ngoodput_exporter_render_errors_total ")) || !bytes.Contains(body, []byte("\nllm_")) {
		t.Fatal("not the daemon's captured output")
	}
	for _, e := range []snapshot.Engine{"", snapshot.VLLM, snapshot.Dynamo} {
		if snap, _, err := scrapeBody(t, e, body); snap != nil || scrapeReason(err) != ReasonSelfScrape {
			t.Errorf("the daemon's own /metrics read as %q: up %v, %v; want self_scrape", e, snap != nil, err)
		}
	}
}

// Dynamo's requests_total without a status label (and an error_type of
// none, or none at all) is counted as unknown, not as an error: worked by
// hand from dynamo-frontend-from-source.prom with the status labels
// removed, 25 + 2 unknown, 1 abort (cancelled), 1 error (internal), the
// validation error left out, as with them.
func TestDynamoWithoutStatusIsUnknown(t *testing.T) {
	body := regexp.MustCompile(`,status="[a-z]+"`).ReplaceAllString(string(readFixture(t, snapshot.Dynamo, "dynamo-frontend-from-source.prom")), "")
	if strings.Contains(body, "status=") {
		t.Fatal("status labels left")
	}
	m := mustParse(t, snapshot.Dynamo, body, "").Model("Qwen/Qwen3-8B")
	if m == nil {
		t.Fatal("no model")
	}
	want := map[string]float64{reasonUnknown: 27, "abort": 1, "error": 1}
	if len(m.Finished) != len(want) {
		t.Errorf("finished %v, want %v", m.Finished, want)
	}
	for r, v := range want {
		if m.Finished[r] != v {
			t.Errorf("finished %v, want %v", m.Finished, want)
		}
	}
	bare := "# TYPE dynamo_frontend_requests_total counter\ndynamo_frontend_requests_total{model=\"m\"} 40\n"
	if m := mustParse(t, snapshot.Dynamo, bare, "").Model("m"); m == nil || m.Finished[reasonUnknown] != 40 || m.Finished["error"] != 0 {
		t.Errorf("no status, no error_type: %+v, want 40 unknown", m)
	}
}
