package exporter

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// 15 minutes of points plus the one at the start, bounded at both ends.
func TestHistoryCap(t *testing.T) {
	for _, c := range []struct {
		interval time.Duration
		want     int
	}{
		{time.Second, 901},             // 900 s / 1 s + 1
		{15 * time.Second, 61},         // 900 / 15 + 1
		{7 * time.Second, 130},         // ceil(900 / 7) = 129, + 1
		{100 * time.Millisecond, 1800}, // 9001, capped
		{time.Hour, 2},                 // ceil(0.25) = 1, + 1
		{0, maxHistoryPoints},          // no interval known
	} {
		if got := historyCap(c.interval); got != c.want {
			t.Errorf("historyCap(%v) = %d, want %d", c.interval, got, c.want)
		}
	}
	// The README's memory figure: a time.Time (24 bytes) and five
	// float64 (40 bytes) per point.
	if n := unsafe.Sizeof(histPoint{}); n != 64 {
		t.Errorf("a point is %d bytes, the README says 64", n)
	}
}

// The ring keeps the newest points, oldest first, and never grows past
// its capacity; a smaller capacity keeps the newest.
func TestHistoryRingKeepsNewest(t *testing.T) {
	h := newHistory(7*time.Minute + 30*time.Second) // 900/450 + 1 = 3 points
	t0 := time.Unix(1000, 0)
	for i := 1; i <= 5; i++ {
		p := histPoint{at: t0.Add(time.Duration(i) * time.Second)}
		p.v[0] = float64(i)
		h.add(p)
		if len(h.pts) > 3 {
			t.Fatalf("%d points kept, capacity 3", len(h.pts))
		}
	}
	var got []float64
	for _, p := range h.points() {
		got = append(got, p.v[0])
	}
	if want := []float64{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("points %v, want %v", got, want)
	}
	h.resize(10 * time.Minute) // 900/600 -> 2, + 1 = 3: unchanged
	h.resize(time.Hour)        // 2 points
	got = nil
	for _, p := range h.points() {
		got = append(got, p.v[0])
	}
	if want := []float64{4, 5}; !slices.Equal(got, want) {
		t.Errorf("after resize to 2: %v, want %v", got, want)
	}
}

// Worked by hand: a 100 s span in a 100×50 box. The point 150 s ago is
// outside; 100 s ago (x 0) value 0 (y 50); 50 s ago missing, which breaks
// the line; 25 s ago (x 75) value 2 and now (x 100) value 4, the top of
// the scale: y 25 and 0.
func TestChartPath(t *testing.T) {
	now := time.Unix(10000, 0)
	at := func(ago, v float64) histPoint {
		p := histPoint{at: now.Add(-time.Duration(ago * float64(time.Second)))}
		for i := range p.v {
			p.v[i] = math.NaN()
		}
		p.v[1] = v
		return p
	}
	pts := []histPoint{at(150, 9), at(100, 0), at(50, math.NaN()), at(25, 2), at(0, 4)}
	path, last, top, ok := chartPath(pts, 1, false, now, 100*time.Second, 100, 50)
	if want := "M0 50 M75 25 L100 0"; path != want || last != 4 || top != 4 || !ok {
		t.Errorf("chartPath = %q, last %v, top %v, %v; want %q, 4, 4, true", path, last, top, ok, want)
	}
	// A ratio has a fixed scale: 0.5 at x 75 sits half way, y 25; 1 at
	// x 100 at the top.
	pts = []histPoint{at(25, 0.5), at(0, 1)}
	if path, _, top, _ := chartPath(pts, 1, true, now, 100*time.Second, 100, 50); path != "M75 25 L100 0" || top != 1 {
		t.Errorf("ratio chartPath = %q, top %v; want \"M75 25 L100 0\", 1", path, top)
	}
	// Nothing in the span: no path.
	if _, _, _, ok := chartPath([]histPoint{at(150, 1)}, 1, false, now, 100*time.Second, 100, 50); ok {
		t.Error("a point outside the span was charted")
	}
}

// What each cycle records: gauges summed over models (the cache: the
// fullest), generation tokens per second between two successful scrapes
// of one process, gaps after a failure and across a restart.
func TestHistoryRecord(t *testing.T) {
	model := func(name string, running, waiting, kv, gen float64) snapshot.Model {
		m := snapshot.Model{Name: name}
		m.Gauges[snapshot.Running] = snapshot.Value{V: running, OK: true}
		m.Gauges[snapshot.Waiting] = snapshot.Value{V: waiting, OK: true}
		m.Gauges[snapshot.KVCacheUsage] = snapshot.Value{V: kv, OK: true}
		m.Counters[snapshot.GenerationTokens] = snapshot.Value{V: gen, OK: true}
		return m
	}
	t0 := time.Unix(5000, 0)
	h := newHistory(time.Second)
	h.record(t0, &snapshot.Snapshot{Models: []snapshot.Model{model("a", 2, 1, 0.3, 100), model("b", 3, 0, 0.6, 50)}}, nil)
	h.record(t0.Add(2*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 4, 0.2, 130), model("b", 1, 0, 0.1, 80)}}, nil)
	h.record(t0.Add(3*time.Second), nil, nil)
	h.record(t0.Add(4*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 0, 0.2, 200)}}, nil)
	h.record(t0.Add(5*time.Second), &snapshot.Snapshot{Restarted: true, Models: []snapshot.Model{model("a", 1, 0, 0.2, 5)}}, nil)
	h.record(t0.Add(7*time.Second), &snapshot.Snapshot{Models: []snapshot.Model{model("a", 1, 0, 0.2, 25)}}, nil)
	pts := h.points()
	nan := math.NaN()
	want := [][numCharts]float64{
		{5, 1, 0.6, nan, nan},
		{2, 4, 0.2, 30, nan}, // (130+80 - (100+50)) / 2 s
		{nan, nan, nan, nan, nan},
		{1, 0, 0.2, nan, nan}, // no rate across the failed scrape
		{1, 0, 0.2, nan, nan}, // nor across a restart
		{1, 0, 0.2, 10, nan},  // (25 - 5) / 2 s
	}
	for i, w := range want {
		for k := range w {
			g := pts[i].v[k]
			if !(g == w[k] || math.IsNaN(g) && math.IsNaN(w[k])) {
				t.Errorf("point %d, %s: %v, want %v", i, chartSignals[k].name, g, w[k])
			}
		}
	}
}

// The charts span what is kept, up to 15 minutes: a daemon started 90 s
// ago charts 90 s.
func TestChartSpan(t *testing.T) {
	now := time.Unix(10000, 0)
	for _, c := range []struct {
		oldest time.Duration
		want   time.Duration
	}{{90 * time.Second, 90 * time.Second}, {20 * time.Minute, 15 * time.Minute}, {0, 15 * time.Minute}} {
		if got := chartSpan([]histPoint{{at: now.Add(-c.oldest)}}, now); got != c.want {
			t.Errorf("oldest %v ago: span %v, want %v", c.oldest, got, c.want)
		}
	}
	if got := chartSpan(nil, now); got != historySpan {
		t.Errorf("no points: span %v, want %v", got, historySpan)
	}
}

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
