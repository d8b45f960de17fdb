package exporter

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

// An engine whose error page carries a script: the landing page shows the
// error as text, never as markup.
func TestLandingPageEscapesEngineText(t *testing.T) {
	evil := newWeb(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `<script>alert("x")</script>`, http.StatusInternalServerError)
	}))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "evil", URL: evil.URL + "/?a=<b>"})
	hs.waitFor("down", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "evil"}) == 0
	})
	resp, err := http.Get(hs.web.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), "<script>") || strings.Contains(string(page), "<b>") {
		t.Errorf("engine text reached the page as markup:\n%s", page)
	}
	if !strings.Contains(string(page), "&lt;script&gt;") {
		t.Errorf("the error is not shown escaped:\n%s", page)
	}
}

// Model names with quotes, backslashes, a newline and non-ASCII text come
// out escaped in the exposition and read back unchanged; promtool accepts
// the whole body.
func TestHostileModelNamesAreEscaped(t *testing.T) {
	names := []string{`a"b`, `back\slash`, "two\nlines", "modèle-日本"}
	var body strings.Builder
	body.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for _, n := range names {
		esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(n)
		body.WriteString(`vllm:num_requests_running{model_name="` + esc + `"} 3` + "\n")
	}
	srv := serveBody(t, []byte(body.String()))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "s", URL: srv.URL, Engine: "vllm"})
	mfs := hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 1
	})
	for _, n := range names {
		if v := value(mfs, "llm_requests_running", map[string]string{"model": n}); v != 3 {
			t.Errorf("model %q: llm_requests_running = %v, want 3", n, v)
		}
	}
	resp, err := http.Get(hs.web.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := p.TextToMetricFamilies(strings.NewReader(string(raw))); err != nil {
		t.Fatal(err)
	}
	promtool.CheckMetrics(t, raw)
}

// Ten models whose 12 KiB names differ only in their last three bytes
// (120 KiB of names in one body; a series past 16 KiB is left out unread,
// collector.TestOverlongSeriesAreLeftOut): each is exported under its first 493
// bytes, "…" and 16 hex digits of its SHA-256, twenty distinct models with
// their own values; /metrics stays small, and the shortened series are
// counted.
func TestLongModelNamesAreShortened(t *testing.T) {
	const models = 10
	var body strings.Builder
	body.WriteString("# TYPE vllm:num_requests_running gauge\n")
	names := make([]string, models)
	for i := range names {
		names[i] = strings.Repeat("x", 12<<10-3) + fmt.Sprintf("%03d", i)
		fmt.Fprintf(&body, "vllm:num_requests_running{model_name=%q} %d\n", names[i], i)
	}
	srv := serveBody(t, []byte(body.String()))
	hs := startExporter(t, 100*time.Millisecond, 8*time.Second, config.Target{Name: "long", URL: srv.URL, Engine: "vllm"})
	mfs := hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "long"}) == 1
	})
	for i, n := range names {
		sum := sha256.Sum256([]byte(n))
		want := strings.Repeat("x", 493) + "…" + hex.EncodeToString(sum[:8])
		if v := value(mfs, "llm_requests_running", map[string]string{"model": want}); v != float64(i) {
			t.Errorf("model %d: llm_requests_running{model=<493 x>…%x} = %v, want %d", i, sum[:8], v, i)
		}
	}
	for _, m := range mfs["llm_requests_running"].GetMetric() {
		for _, l := range m.GetLabel() {
			if len(l.GetValue()) > 512 {
				t.Errorf("label %s of %d bytes exported", l.GetName(), len(l.GetValue()))
			}
		}
	}
	if v := value(mfs, "goodput_exporter_target_shortened_label_values_total", map[string]string{"target": "long"}); v < models {
		t.Errorf("shortened series counted %v, want at least %d (one scrape)", v, models)
	}
	resp, err := http.Get(hs.web.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// Every series of a model carries its name: the exposition is tens of
	// KB with the cap, and megabytes without.
	if len(raw) > 1<<20 {
		t.Errorf("/metrics is %d bytes with %d long model names", len(raw), models)
	}
	promtool.CheckMetrics(t, raw)
	if !strings.Contains(hs.log.String(), "label values longer than the cap") {
		t.Errorf("no log line about the shortened values:\n%s", hs.log.String())
	}
}

// Series left out of a body are counted by reason on every scrape: an
// engine of five models on a target whose model_limit is 2 adds 3 to
// model_limit a scrape, and the counter only grows.
func TestSeriesLeftOutAreCounted(t *testing.T) {
	var body strings.Builder
	body.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for i := range 5 {
		fmt.Fprintf(&body, "vllm:num_requests_running{model_name=\"m%d\"} %d\n", i, i)
	}
	srv := serveBody(t, []byte(body.String()))
	hs := startExporter(t, 100*time.Millisecond, 8*time.Second, config.Target{Name: "many", URL: srv.URL, Engine: "vllm", ModelLimit: 2})
	left := func(m map[string]*dto.MetricFamily, reason string) float64 {
		return value(m, "goodput_exporter_target_series_left_out_total", map[string]string{"target": "many", "reason": reason})
	}
	last := 0.0
	for range 3 {
		mfs := hs.waitFor("more left out", func(m map[string]*dto.MetricFamily) bool { return left(m, "model_limit") > last })
		v := left(mfs, "model_limit")
		if int(v)%3 != 0 || v <= last {
			t.Fatalf("model_limit left out %v after %v: want a multiple of 3 (three models a scrape), growing", v, last)
		}
		if b, l := left(mfs, "state_budget"), left(mfs, "too_long"); b != 0 || l != 0 {
			t.Errorf("state_budget %v, too_long %v: want 0", b, l)
		}
		last = v
	}
}
