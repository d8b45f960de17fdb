package exporter

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

var update = flag.Bool("update", false, "rewrite golden files")

// windowSeries are the families the window golden file pins.
var windowSeries = []string{
	"llm_slo_supported", "llm_slo_requests_total", "llm_slo_good_requests_total",
	"llm_slo_interpolated_requests_total", "llm_slo_aborted_requests_total",
	"llm_goodput_requests_total", "llm_goodput_tokens_total", "llm_goodput_tokens_bounded",
	"llm_goodput_judged_requests_total", "llm_goodput_failed_requests_total", "llm_goodput_objective_good_requests_total",
	"llm_goodput_objective_judged_requests_total", "llm_goodput_output_length_requests_total", "llm_goodput_output_length_tokens_total",
	"llm_goodput_output_length_unmeasured_requests_total", "llm_goodput_output_length_step_tokens",
	"llm_slo_threshold_seconds", "llm_slo_target_ratio", "llm_engine_hourly_cost",
}

// TestWindowGolden scrapes a vLLM V1 body reconstructed from vLLM's source
// (not a capture) and the same body advanced by 10 % as the same process a
// window later, and pins every SLO and goodput series the daemon derives.
func TestWindowGolden(t *testing.T) {
	t0, err := os.ReadFile("testdata/window/t0.prom")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/window/t1.prom", testbody.Advance(t0, 0.1), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t1, err := os.ReadFile("testdata/window/t1.prom")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if n.Add(1) == 1 {
			w.Write(t0)
			return
		}
		w.Write(t1)
	}))
	defer srv.Close()
	cfg, err := config.Load("testdata/window/slos.yml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Targets[0].URL = srv.URL
	e := New(Options{Interval: time.Hour, Timeout: 5 * time.Second})
	e.cfg = cfg
	tg, err := newTarget(cfg.Targets[0], 5*time.Second, cfg.GoodputSLOs(), e)
	if err != nil {
		t.Fatal(err)
	}
	e.targets = map[string]*target{tg.cfg.Name: tg}
	tg.scrape(context.Background())
	tg.scrape(context.Background())
	if st := tg.snapshotState(); !st.up || st.snap.Restarted {
		t.Fatalf("second scrape: up=%v restarted=%v", st.up, st.snap != nil && st.snap.Restarted)
	}
	golden := "testdata/window/golden.prom"
	if *update {
		writeFamilies(t, e, golden, windowSeries)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.GatherAndCompare(e.Gatherer(), bytes.NewReader(want), windowSeries...); err != nil {
		t.Error(err)
	}
	promtool.CheckMetrics(t, renderNow(e))
}

func writeFamilies(t *testing.T, e *Exporter, path string, names []string) {
	t.Helper()
	body := renderNow(e)
	var out bytes.Buffer
	keep := map[string]bool{}
	for _, n := range names {
		keep[n] = true
	}
	cur := ""
	for _, line := range bytes.SplitAfter(body, []byte("\n")) {
		if f := bytes.Fields(line); len(f) >= 3 && (string(f[1]) == "HELP" || string(f[1]) == "TYPE") {
			cur = string(f[2])
		}
		if keep[cur] {
			out.Write(line)
		}
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
