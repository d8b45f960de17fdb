package exporter

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// servedBody serves whatever body is set last.
type servedBody struct {
	mu   sync.Mutex
	body []byte
}

func (s *servedBody) set(b []byte) { s.mu.Lock(); s.body = b; s.mu.Unlock() }
func (s *servedBody) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Write(s.body)
}

const kopsModel = `model_name="Qwen/Qwen2.5-0.5B-Instruct"`

// An extra data-parallel rank reporting 1.7e308 finished requests on the
// real kops capture: the increase is refused as implausible, and the
// target's scrape says so beside llm_up (which stays 1: the rest of the
// body is read) and on the status page. Before, only the discontinuities
// counter showed it, and the target looked healthy.
func TestImplausibleRankIsReported(t *testing.T) {
	full := fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom")
	eng := &servedBody{body: full}
	hs := startExporter(t, 20*time.Millisecond, 20*time.Millisecond, config.Target{Name: "r", URL: newWeb(t, eng).URL, Engine: "vllm"})
	target := map[string]string{"target": "r"}
	hs.waitFor("the capture read, nothing refused", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", target) == 1 && value(m, "goodput_exporter_target_implausible_series", target) == 0
	})
	extra := "vllm:request_success_total{engine=\"1\",finished_reason=\"stop\"," + kopsModel + "} 1.7e308\n"
	eng.set(append(append([]byte{}, full...), extra...))
	m := hs.waitFor("the extra rank refused and reported", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "goodput_exporter_target_implausible_series", target) >= 1
	})
	if up := value(m, "llm_up", target); up != 1 {
		t.Errorf("llm_up %v, want 1: the rest of the body is read", up)
	}
	if n := value(m, "goodput_exporter_series_discontinuities_total", map[string]string{"target": "r", "reason": "implausible"}); n < 1 {
		t.Errorf("implausible discontinuities %v, want at least 1", n)
	}
	page := getPage(t, hs.web.URL+"/")
	if !strings.Contains(page, "implausible increase, nothing added: Qwen/Qwen2.5-0.5B-Instruct: finished") {
		t.Errorf("the status page does not show the refused series:\n%s", page)
	}
}

// A counter that falls by about 100 % under an unchanged process start
// time is a glitch (no restart explains it), and its log line says so
// rather than "went down by less than half".
func TestFullFallLogWording(t *testing.T) {
	full := string(fixture(t, "vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	const line = "vllm:generation_tokens_total{engine=\"0\"," + kopsModel + "} 0.0"
	if !strings.Contains(full, line) {
		t.Fatal("the capture's generation token line changed")
	}
	at := func(v string) []byte {
		return []byte(strings.Replace(full, line, strings.TrimSuffix(line, "0.0")+v, 1))
	}
	eng := &servedBody{body: at("100000")}
	hs := startExporter(t, 20*time.Millisecond, 20*time.Millisecond, config.Target{Name: "f", URL: newWeb(t, eng).URL, Engine: "vllm"})
	glitches := func(m map[string]*dto.MetricFamily) float64 {
		return value(m, "goodput_exporter_series_discontinuities_total", map[string]string{"target": "f", "reason": "glitch"})
	}
	hs.waitFor("the first body read", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "f"}) == 1
	})
	eng.set(at("1"))
	hs.waitFor("the fall counted as a glitch", func(m map[string]*dto.MetricFamily) bool { return glitches(m) >= 1 })
	logs := hs.log.String()
	if strings.Contains(logs, "less than half, which") || !strings.Contains(logs, "went down with no restart to explain it") {
		t.Errorf("a 100000 -> 1 fall under an unchanged start time logged as:\n%s", logs)
	}
}
