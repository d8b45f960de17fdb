package main

import (
	"bufio"
	"context"
	be "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/proxy"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// simSeen is one simulated request as its client saw it, on the replay's
// clock (virtual seconds).
type simSeen struct {
	status         int
	done, errEvent bool
	aborted        bool
	hasTTFT        bool
	ttft, e2e      float64
	chunks, tokens int
}

func (s simSeen) ok() bool { return s.status == 200 && s.done && !s.errEvent && !s.aborted }

// The Done-when test on the simulator: an SGLang-like engine's requests
// (a healthy spell, queue growth, then an abort of everything in flight)
// are played back through the measuring proxy at their own times, and the
// client's own judgement of each equals the daemon's bound="exact"
// counts, up to requests the two clocks cannot tell apart: one within
// 25 ms (virtual) of a threshold, or an aborted one whose chunk count is
// at the two-token edge of the tpot rule (the proxy may have read one
// chunk more than the client before it hung up).
func TestProxyExactGoodputOnTheSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("plays back a minute of simulated traffic")
	}
	const speed = 2.0 // virtual seconds per wall second of the playback
	cfg := sim.DefaultConfig()
	sc, err := sim.ParseScenario("healthy:10s,queue_growth:10s,abort,healthy:5s")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Scenario = sc
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.Advance(25 * time.Second)
	e.Drain(120 * time.Second)
	recs := e.Truth().Records(0, e.Now())
	model := cfg.Model.Name

	fixture, err := os.ReadFile(filepath.Join("..", "..", "collector", "testdata", "fixtures", "sglang", "sglang-from-source.prom"))
	if err != nil {
		t.Fatal(err)
	}
	replay := &sim.Replay{Speed: speed, Coalesce: 5 * time.Millisecond, Model: model}
	for _, r := range recs {
		replay.Add(r)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write(fixture) })
	mux.Handle("/v1/", replay)
	engine := httptest.NewServer(mux)
	defer engine.Close()

	cfgFile := filepath.Join(t.TempDir(), "cfg.yml")
	os.WriteFile(cfgFile, []byte(`
targets:
  - name: sg
    url: `+engine.URL+`/metrics
    traces: { service_name: sglang-sim }
slos:
  - name: chat
    objectives:
      ttft: { threshold: 500ms, target: 0.99 }
      tpot: { threshold: 50ms, target: 0.95 }
      error: { target: 0.99, include_abort: true }
`), 0o600)
	web, otlpAddr := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serveDone := make(chan error, 1)
	go func() {
		serveDone <- run(ctx, []string{"serve", "--config.file", cfgFile, "--web.listen-address", web, "--otlp.http.listen-address", otlpAddr, "--collect.interval", "100ms"}, io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-serveDone }()

	// The proxy and the client read the same clock, running at the
	// playback's speed, so that both measure in virtual seconds.
	wall0 := time.Now()
	clock := func() time.Time { return wall0.Add(time.Duration(float64(time.Since(wall0)) * speed)) }
	up, _ := url.Parse(engine.URL)
	p, err := proxy.New(proxy.Options{Upstream: up, InjectUsage: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	exp := proxy.NewExporter(proxy.ExporterOptions{Endpoint: "http://" + otlpAddr + "/v1/traces", Resource: proxy.Resource{ServiceName: "sglang-sim"}, BatchTimeout: 100 * time.Millisecond}, p.Metrics)
	var recMu sync.Mutex
	byID := map[uint64]proxy.Record{}
	p.SetSink(func(r *proxy.Record) {
		recMu.Lock()
		byID[be.BigEndian.Uint64(r.TraceID[8:])] = *r
		recMu.Unlock()
		exp.Enqueue(r)
	})
	expCtx, expCancel := context.WithCancel(context.Background())
	go exp.Run(expCtx)
	front := httptest.NewServer(p)
	defer front.Close()

	get := func(u string) string {
		resp, err := http.Get(u)
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(get("http://"+web+"/metrics"), `llm_up{engine="sglang",target="sg"} 1`); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not scrape the engine")
		}
	}

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	all := make([]simSeen, len(recs))
	var wg sync.WaitGroup
	playStart := time.Now()
	first := recs[0].Arrival
	for i, r := range recs {
		time.Sleep(time.Until(playStart.Add(time.Duration(float64(r.Arrival-first) / speed))))
		wg.Add(1)
		go func() { defer wg.Done(); all[i] = playMeasured(client, front.URL, r, model, speed, clock) }()
	}
	wg.Wait()
	// A client that hung up returns before the proxy's handler has
	// finished with its request: Close waits for every handler, so every
	// record is in byID and queued for the daemon before the exporter stops.
	front.Close()
	expCancel()
	<-exp.Done()
	recMu.Lock()
	defer recMu.Unlock()

	// Each request judged twice by the rules of docs/otlp.md: from what
	// the client timed itself, and from the proxy's record of it.
	var own, fromProxy simTally
	aborts, unseen, differ := 0, 0, 0
	for i, s := range all {
		if s.aborted {
			aborts++
		}
		cv := clientView(s)
		own.add(cv)
		pr, ok := byID[recs[i].ID]
		if !ok {
			// Hung up before the proxy had the request: nobody but the
			// client saw it.
			unseen++
			continue
		}
		pv := proxyView(pr)
		fromProxy.add(pv)
		if cj, cg := cv.judge(); true {
			if pj, pg := pv.judge(); cj != pj || cg != pg {
				differ++
				t.Logf("request %d judged apart: client %+v, proxy %+v", recs[i].ID, cv, pv)
			}
		}
	}
	sent := testutilValue(p.Metrics, "goodput_exporter_proxy_spans_sent_total")
	var m string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m = get("http://" + web + "/metrics")
		if strings.Contains(m, fmt.Sprintf(`goodput_exporter_otlp_spans_total{result="folded"} %v`, sent)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon folded fewer spans than the proxy sent (%v):\n%s", sent, grepLines(m, "goodput_exporter_otlp_spans_total"))
		}
	}
	val := func(prefix string) float64 {
		for _, l := range strings.Split(m, "\n") {
			if strings.HasPrefix(l, prefix) {
				var v float64
				fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
				return v
			}
		}
		return -1
	}
	sel := `engine="sglang",model="` + model + `",sampled="false",slo="chat",target="sg"}`
	daemon := simTally{
		judged:   val(`llm_goodput_traced_requests_total{` + sel),
		good:     val(`llm_goodput_requests_total{bound="exact",engine="sglang",model="` + model + `",slo="chat",target="sg"}`),
		unjudged: val(`llm_goodput_traced_unjudged_requests_total{` + sel),
	}
	t.Logf("%d simulated requests, %d aborted, %d hung up before reaching the proxy, %d judged apart by client and proxy; client %+v, proxy's records %+v, daemon %+v",
		len(recs), aborts, unseen, differ, own, fromProxy, daemon)
	if aborts == 0 || own.good == 0 || own.good == own.judged || own.unjudged == 0 {
		t.Fatalf("the playback exercises too little: %d aborts, client %+v", aborts, own)
	}
	// The daemon's exact counts are the proxy's measurements judged, to
	// the request.
	if daemon != fromProxy {
		t.Errorf("the daemon judged %+v, the proxy's records judged by the stated rules %+v", daemon, fromProxy)
	}
	if sent != float64(len(recs)-unseen) {
		t.Errorf("the proxy sent %v spans for %d requests it saw", sent, len(recs)-unseen)
	}
	// And they are the client's own judgement, up to the requests the
	// client timed apart from the proxy (its connection set up or its
	// goroutine scheduled late on a loaded machine): a handful in 500.
	if unseen+differ > len(recs)/50 {
		t.Errorf("%d requests unseen and %d judged apart, of %d", unseen, differ, len(recs))
	}
}

// simTally is one SLO's counts: requests judged, good, and left out.
type simTally struct{ judged, good, unjudged float64 }

func (t *simTally) add(v simView) {
	judged, good := v.judge()
	switch {
	case !judged:
		t.unjudged++
	case good:
		t.judged++
		t.good++
	default:
		t.judged++
	}
}

// simView is one request as either side measured it.
type simView struct {
	ok, hasTTFT, estimated bool
	ttft, e2e              float64
	tokens                 int
}

func clientView(s simSeen) simView {
	v := simView{ok: s.ok(), hasTTFT: s.hasTTFT, ttft: s.ttft, e2e: s.e2e, tokens: s.tokens}
	if !v.ok {
		// No usage came: the proxy counts the content-bearing chunks, an
		// estimate.
		v.tokens, v.estimated = s.chunks, s.chunks > 0
	}
	return v
}

func proxyView(r proxy.Record) simView {
	return simView{ok: r.Outcome == proxy.OutcomeOK, hasTTFT: r.HasTTFT, ttft: r.TTFT.Seconds(), e2e: r.E2E().Seconds(), tokens: int(r.Tokens), estimated: r.Estimated}
}

// judge applies the test's SLO (ttft 500 ms, tpot 50 ms, error with
// aborts): a tpot from estimated tokens is unknown, so the request is
// left out; a failed or aborted one is bad.
func (v simView) judge() (judged, good bool) {
	if v.estimated && v.tokens >= 2 {
		return false, false
	}
	tpot := 0.0
	if v.tokens >= 2 {
		tpot = (v.e2e - v.ttft) / float64(v.tokens-1)
	}
	return true, v.ok && v.hasTTFT && v.ttft <= 0.5 && tpot <= 0.05
}

// playMeasured plays one record through base as sim.Play does, timing it
// on clock.
func playMeasured(client *http.Client, base string, r sim.Record, model string, speed float64, clock func() time.Time) simSeen {
	var s simSeen
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var abortAt time.Time
	if r.Reason == sim.FinishAbort {
		abortAt = time.Now().Add(time.Duration(float64(r.Finish-r.Arrival) / speed))
	}
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"messages":[]}`, model, max(r.MaxTokens, r.OutputTokens))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set(sim.ReplayHeader, fmt.Sprint(r.ID))
	req.Header.Set("traceparent", fmt.Sprintf("00-%032x-%016x-01", r.ID, r.ID+1))
	t0 := clock()
	since := func() float64 { return clock().Sub(t0).Seconds() }
	if !abortAt.IsZero() {
		tm := time.AfterFunc(time.Until(abortAt), cancel)
		defer tm.Stop()
	}
	resp, err := client.Do(req)
	if err != nil {
		s.e2e = since()
		s.aborted = !abortAt.IsZero() && ctx.Err() != nil
		return s
	}
	defer resp.Body.Close()
	s.status = resp.StatusCode
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal([]byte(data), &c)
		if len(c.Error) > 0 {
			s.errEvent = true
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != "" {
				if !s.hasTTFT {
					s.hasTTFT, s.ttft = true, since()
				}
				s.chunks++
				s.tokens += len(ch.Delta.Content)
			}
		}
	}
	s.e2e = since()
	s.aborted = !abortAt.IsZero() && ctx.Err() != nil
	return s
}

// testutilValue reads one unlabelled counter of a collector.
func testutilValue(c prometheus.Collector, name string) float64 {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}
