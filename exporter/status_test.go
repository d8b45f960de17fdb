package exporter

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

func TestRefreshSeconds(t *testing.T) {
	for in, want := range map[time.Duration]int{300 * time.Millisecond: 1, 15 * time.Second: 15, 1500 * time.Millisecond: 2, time.Minute: 30} {
		if got := refreshSeconds(in); got != want {
			t.Errorf("refreshSeconds(%v) = %d, want %d", in, got, want)
		}
	}
}

type fakeLevers struct {
	cur  string
	set  [][2]string
	fail bool
}

func (f *fakeLevers) Levers(target string) (string, []string, bool) {
	return f.cur, []string{"healthy", "queue_growth"}, target == "a"
}

func (f *fakeLevers) SetLever(target, lever string) error {
	if f.fail {
		return errors.New("no such lever")
	}
	f.set = append(f.set, [2]string{target, lever})
	return nil
}

// A daemon without Options.Levers has no lever endpoint and no buttons.
func TestNoLeverEndpointWithoutLevers(t *testing.T) {
	srv := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "a", URL: srv.URL})
	resp, err := http.PostForm(hs.web.URL+"/-/lever", url.Values{"target": {"a"}, "lever": {"queue_growth"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /-/lever without levers: %s, want 404", resp.Status)
	}
	if page := getPage(t, hs.web.URL+"/"); strings.Contains(page, `name="lever"`) {
		t.Errorf("lever buttons on a daemon without levers:\n%s", page)
	}
}

// With levers (the demo): a form per target that has one, the lever in
// force marked; the endpoint takes a same-site POST only, and answers
// with the page.
func TestLeverEndpoint(t *testing.T) {
	srv := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	fl := &fakeLevers{cur: "queue_growth"}
	hs := startExporterWith(t, Options{Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, Levers: fl}, nil,
		config.Target{Name: "a", URL: srv.URL}, config.Target{Name: "b", URL: srv.URL})
	page := getPage(t, hs.web.URL+"/")
	if !strings.Contains(page, `<button type="submit" name="lever" value="queue_growth" class="on">`) ||
		!strings.Contains(page, `<button type="submit" name="lever" value="healthy">`) {
		t.Errorf("no lever buttons with the lever in force marked:\n%s", page)
	}
	if n := strings.Count(page, `<form class="levers"`); n != 1 {
		t.Errorf("%d lever forms, want 1 (target b has no lever)", n)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(form url.Values, site string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, hs.web.URL+"/-/lever", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	form := url.Values{"target": {"a"}, "lever": {"healthy"}}
	if r := post(form, "cross-site"); r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %s, want 403", r.Status)
	}
	evil, _ := http.NewRequest(http.MethodPost, hs.web.URL+"/-/lever", strings.NewReader(form.Encode()))
	evil.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	evil.Header.Set("Origin", "http://evil.example") // no Sec-Fetch-Site: plain HTTP, not localhost
	if r, err := noRedirect.Do(evil); err != nil || r.StatusCode != http.StatusForbidden {
		t.Errorf("POST from another origin: %v %v, want 403", r, err)
	} else {
		r.Body.Close()
	}
	r := post(form, "same-origin")
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "../" {
		t.Errorf("POST: %s to %q, want 303 to ../ (the page)", r.Status, r.Header.Get("Location"))
	}
	if len(fl.set) != 1 || fl.set[0] != [2]string{"a", "healthy"} {
		t.Errorf("levers set %v, want [[a healthy]]", fl.set)
	}
	fl.fail = true
	if r := post(form, ""); r.StatusCode != http.StatusBadRequest {
		t.Errorf("a refused lever: %s, want 400", r.Status)
	}
	resp, err := http.Get(hs.web.URL + "/-/lever")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /-/lever: %s, want 405", resp.Status)
	}
}

// A model name carrying markup is text on the page, and the page's
// assets are served from the binary.
func TestStatusPageEscapesModelName(t *testing.T) {
	const evil = `<img src=x onerror="document.title='owned'"><b>bold</b>`
	body := "# TYPE vllm:num_requests_running gauge\n" +
		`vllm:num_requests_running{model_name="` + strings.ReplaceAll(evil, `"`, `\"`) + `"} 3` + "\n"
	srv := serveBody(t, []byte(body))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond, config.Target{Name: "s", URL: srv.URL, Engine: "vllm"})
	hs.waitFor("up", func(m map[string]*dto.MetricFamily) bool {
		return value(m, "llm_up", map[string]string{"target": "s"}) == 1
	})
	page := getPage(t, hs.web.URL+"/")
	if strings.Contains(page, "<img") || strings.Contains(page, "<b>") {
		t.Errorf("the model name reached the page as markup:\n%s", page)
	}
	if !strings.Contains(page, `<span class="model">&lt;img src=x onerror=&#34;document.title=&#39;owned&#39;&#34;&gt;&lt;b&gt;bold&lt;/b&gt;</span>`) {
		t.Errorf("the model name is not shown as escaped text:\n%s", page)
	}
	for _, asset := range []string{"/static/status.css", "/static/status.js"} {
		if got := getPage(t, hs.web.URL+asset); len(got) < 100 {
			t.Errorf("%s: %q", asset, got)
		}
	}
}

func getPage(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, b)
	}
	return string(b)
}

// The page says, per target, whether its goodput is exact or bounds: a
// target behind the measuring proxy, or with request spans configured, is
// exact; one with neither has the histogram bounds only.
func TestStatusPageGoodputSource(t *testing.T) {
	srv := serveBody(t, fixture(t, "vllm/v1-latest-from-source.prom"))
	hs := startExporter(t, 50*time.Millisecond, 50*time.Millisecond,
		config.Target{Name: "proxied", URL: srv.URL, Proxied: true},
		config.Target{Name: "traced", URL: srv.URL, Traces: &config.Traces{ServiceName: "traced"}},
		config.Target{Name: "plain", URL: srv.URL})
	page := getPage(t, hs.web.URL+"/")
	for name, want := range map[string]string{
		"proxied": "exact: each request judged from the measuring proxy",
		"traced":  "exact: each request judged from its request span",
		"plain":   "bounds: from the engine&#39;s histograms only",
	} {
		i := strings.Index(page, `data-target="`+name+`"`)
		if i < 0 {
			t.Fatalf("no section for %s", name)
		}
		section := page[i:]
		if j := strings.Index(section[1:], "<section"); j > 0 {
			section = section[:j]
		}
		if !strings.Contains(section, want) {
			t.Errorf("%s: the page does not say %q:\n%s", name, want, section)
		}
	}
}

// queue_growth is judged from half a window of history: raised before
// the window is covered, the page names it, and says the other modes are
// still warming up.
func TestVerdictNamesAQueueRaisedWhileWarmingUp(t *testing.T) {
	var v diagnosis.Verdict
	for _, m := range diagnosis.Modes() {
		v.Modes[m].Supported = true
	}
	verdict, _, _ := verdictParts(v)
	if !strings.HasPrefix(verdict, "warming up") {
		t.Errorf("nothing raised before a window: verdict %q, want warming up", verdict)
	}
	v.Modes[diagnosis.QueueGrowth].Raised = true
	verdict, raised, _ := verdictParts(v)
	if !strings.HasPrefix(verdict, "queue_growth") || !strings.Contains(verdict, "warming up") || len(raised) != 1 {
		t.Errorf("queue_growth raised before a window: verdict %q (%d raised), want it named and the others warming up", verdict, len(raised))
	}
}
