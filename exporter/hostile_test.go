package exporter

import (
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
