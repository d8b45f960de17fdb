package exporter

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/internal/chromium"
)

// In a real browser, a model name carrying markup and script is shown as
// text: no element comes of it and its handler never runs.
func TestStatusPageInBrowserShowsModelNameAsText(t *testing.T) {
	chromium.Path(t)
	const evil = `<img src=x onerror="document.title='owned'"><b>bold</b>`
	body := "# TYPE vllm:num_requests_running gauge\n" +
		`vllm:num_requests_running{model_name="` + strings.ReplaceAll(evil, `"`, `\"`) + `"} 3` + "\n"
	srv := serveBody(t, []byte(body))
	hs := startExporter(t, 200*time.Millisecond, 200*time.Millisecond, config.Target{Name: "s", URL: srv.URL, Engine: "vllm"})
	hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 1
	})
	dom := chromium.DumpDOM(t, hs.web.URL+"/")
	if strings.Contains(dom, "<img") || strings.Contains(dom, "<b>") || !strings.Contains(dom, "&lt;b&gt;bold&lt;/b&gt;") {
		t.Errorf("the browser's DOM does not hold the model name as text:\n%s", dom)
	}
	p := chromium.Open(t, hs.web.URL+"/", 1000, 700)
	p.WaitFor("the model shown", `document.querySelector('span.model')`, 20*time.Second)
	want, _ := json.Marshal(evil)
	p.WaitFor("the model name as its text", `document.querySelector('span.model').textContent === `+string(want), 5*time.Second)
	// Long enough for an image error handler to have run, and for the
	// page's own refresh (1 s) to have replaced the content once.
	time.Sleep(1500 * time.Millisecond)
	if got := p.String(`document.title + " " + document.querySelectorAll('main img, main b').length`); got != "goodput-exporter 0" {
		t.Errorf("title and injected elements: %q, want \"goodput-exporter 0\"", got)
	}
}
