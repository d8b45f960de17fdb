package exporter

import (
	"bytes"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// The targets share one budget for the bodies in flight: with a 1 MiB
// budget, a 2 MiB body (under its own 32 MiB cap) is refused as
// body_too_large with the budget named, and the engine beside it is up.
func TestBodiesShareOneBudget(t *testing.T) {
	small := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	line := []byte("# padding a body past the budget, as a comment\n")
	large := serveBody(t, append(fixture(t, "vllm/v1-latest-from-source.prom"), bytes.Repeat(line, (2<<20)/len(line))...))
	hs := startExporterWith(t, Options{Interval: 50 * time.Millisecond, Timeout: time.Second, BodyBudget: 1 << 20}, nil,
		config.Target{Name: "small", URL: small.URL}, config.Target{Name: "large", URL: large.URL, Engine: "vllm"})
	hs.waitFor("small up, large refused", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "small"}) == 1 &&
			value(m, "goodput_exporter_target_scrape_errors_total", map[string]string{"target": "large", "reason": "body_too_large"}) >= 1
	})
	st := hs.ex.targets["large"]
	st.mu.Lock()
	msg := st.state.lastErr
	st.mu.Unlock()
	if !strings.Contains(msg, "--collect.body-budget") {
		t.Errorf("the refusal does not name the budget: %q", msg)
	}
}
