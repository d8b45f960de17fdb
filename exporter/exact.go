package exporter

import (
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Bound label values of the goodput series judged from request traces.
const (
	BoundExact   = "exact"   // every request traced, each judged on its own
	BoundSampled = "sampled" // judged per request, but only a sample was traced
)

// exactLag is how late a request's span may reach the daemon after the
// request finished and still be compared with the histograms that counted
// it: an OTLP batch exporter sends every few seconds (5 s by default in
// the OpenTelemetry SDKs). At least one scrape is always allowed.
const exactLag = 10 * time.Second

// boundReadings keep, per model and SLO, what the self-check compares at
// each scrape: the joint's window totals, the requests in flight and the
// exact counts as of that scrape. The readings are capped (maxBoundReadings);
// dropping the oldest only makes the check's lower side looser.
const maxBoundReadings = 64

type boundReading struct {
	at   time.Time
	w    goodput.WindowTotals
	edge float64 // running + waiting at the scrape
	good float64 // exact good requests folded by then
}

type boundSums struct {
	first, base *boundReading // the first reading, and the first at least exactLag after it
	recent      []boundReading
	// verdict is the self-check as of the last scrape: 1, 0, or -1 while
	// it has too few readings to say.
	verdict float64
	// last is what that verdict compared, for the status page: it shows
	// the gauge's own figures, so the two cannot disagree.
	last boundCheck
}

// boundCheck is one comparison of the self-check: the exact good
// requests whose spans arrived since the base reading, and the bounds
// over the same requests, each widened by the requests in flight at its
// window's edges (lowerEdge, upperEdge).
type boundCheck struct {
	since                time.Time // the base reading
	got, lower, upper    float64
	lowerEdge, upperEdge float64
}

// judge compares the exact good requests that arrived since the base
// reading with the window bounds over the same requests. Spans of the
// requests that finished between the base and lagged readings (the newest
// one at least exactLag old) have all arrived, so the exact count is at
// least the lower bound over that window; the spans that arrived since the
// base are of requests that finished after the first reading, so it is at
// most the upper bound over the window from the first reading to now.
// Each bound is widened by the requests in flight at its window's edges.
func (b *boundSums) judge(cur boundReading) {
	if n := len(b.recent); n > 0 && (cur.w.Requests < b.recent[n-1].w.Requests || len(cur.w.Good) != len(b.recent[n-1].w.Good)) {
		*b = boundSums{} // the joint's totals started over (a reload changed the SLO)
	}
	b.recent = append(b.recent, cur)
	if len(b.recent) > maxBoundReadings {
		b.recent = slices.Delete(b.recent, 0, len(b.recent)-maxBoundReadings)
	}
	switch {
	case b.first == nil:
		b.first, b.verdict = &boundReading{at: cur.at, w: cur.w.Clone(), edge: cur.edge, good: cur.good}, -1
		return
	case b.base == nil:
		if cur.at.Sub(b.first.at) < exactLag {
			return
		}
		b.base = &boundReading{at: cur.at, w: cur.w.Clone(), edge: cur.edge, good: cur.good}
	}
	lower, lowerEdge := 0.0, 0.0
	for i := len(b.recent) - 2; i >= 0; i-- {
		r := &b.recent[i]
		if r.at.After(b.base.at) && cur.at.Sub(r.at) >= exactLag {
			lowerEdge = b.base.edge + r.edge
			lower = goodput.WindowBounds(b.base.w, r.w).Lower - lowerEdge
			break
		}
	}
	upperEdge := b.first.edge + cur.edge
	upper := goodput.WindowBounds(b.first.w, cur.w).Upper + upperEdge
	got := cur.good - b.base.good
	b.last = boundCheck{since: b.base.at, got: got, lower: lower, upper: upper, lowerEdge: lowerEdge, upperEdge: upperEdge}
	tol := 1e-9 * max(1, upper)
	b.verdict = 0
	if got >= lower-tol && got <= upper+tol {
		b.verdict = 1
	}
}

// exactDescs are the descriptors of a target's trace-judged series.
type exactDescs struct {
	objRequests, objGood, requests, tokens, unjudged, within *prometheus.Desc
}

func newExactDescs(cl prometheus.Labels) *exactDescs {
	obj := []string{"engine", "model", "slo", "objective", "sampled"}
	slo := []string{"engine", "model", "slo", "sampled"}
	return &exactDescs{
		objRequests: prometheus.NewDesc("llm_slo_traced_requests_total",
			"Requests judged against an SLO objective from the engine's own request trace spans (OTLP), one request at a time. sampled=\"true\" when the spans came from a sampled stream.", obj, cl),
		objGood: prometheus.NewDesc("llm_slo_traced_good_requests_total",
			"Of llm_slo_traced_requests_total, those that met the objective: exact, no interpolation.", obj, cl),
		requests: prometheus.NewDesc("llm_goodput_traced_requests_total",
			"Requests judged against every objective of an SLO from request trace spans: the denominator of llm_goodput_requests_total{bound=\"exact\"} (sampled=\"false\") and {bound=\"sampled\"} (sampled=\"true\").", slo, cl),
		tokens: prometheus.NewDesc("llm_goodput_traced_tokens_total",
			"Generation tokens of llm_goodput_traced_requests_total.", slo, cl),
		unjudged: prometheus.NewDesc("llm_goodput_traced_unjudged_requests_total",
			"Traced requests left out of an SLO because their span lacked what an objective needs (no queue time, no first-token time although tokens were generated): never guessed.", slo, cl),
		within: prometheus.NewDesc("llm_goodput_exact_within_bounds",
			"Self-check where both exist: 1 when the requests judged good from traces lie within the histogram bounds over the same requests, 0 when they do not. Compared as of each scrape: the good spans that arrived since a base scrape must be at least the lower bound over the window from that scrape to the newest one at least 10 s old (later spans may still be on their way) and at most the upper bound over the window from the first reading, each widened by the requests in flight at its window's edges. Absent for the first 10 s of a model's traces.", []string{"engine", "model", "slo"}, cl),
	}
}

// noteBounds reads, for the self-check, the histogram bounds and the
// exact counts of every traced model as of this scrape. Caller holds
// t.mu.
func (t *target) noteBounds(snap *snapshot.Snapshot) {
	if t.exact == nil {
		return
	}
	// Traced models come and go like scraped ones: forgotten after the
	// same hour without a request, and their self-check readings with
	// them.
	if t.exact.Forget(forgetModelsAfter) > 0 {
		for key := range t.bounds {
			model, _, _ := strings.Cut(key, "\x00")
			if t.exact.Model(model) == nil {
				delete(t.bounds, key)
			}
		}
	}
	for _, ms := range t.tracker.Models() {
		xm := t.exact.Model(ms.Model)
		m := snap.Model(ms.Model)
		if xm == nil || m == nil {
			continue
		}
		for _, ss := range ms.SLOs {
			if ss.Joint.RequestsSource == "" || !ss.Joint.Supported {
				continue
			}
			i := slices.IndexFunc(xm.SLOs, func(x goodput.ExactSLO) bool { return x.SLO == ss.SLO })
			if i < 0 || !xm.SLOs[i].Supported {
				continue
			}
			if t.bounds == nil {
				t.bounds = map[string]*boundSums{}
			}
			key := ms.Model + "\x00" + ss.SLO
			b := t.bounds[key]
			if b == nil {
				b = &boundSums{}
				t.bounds[key] = b
			}
			b.judge(boundReading{
				at:   snap.Time,
				w:    ss.Joint.Window.Clone(),
				edge: m.Gauges[snapshot.Running].V + m.Gauges[snapshot.Waiting].V,
				good: xm.SLOs[i].Exact.GoodRequests,
			})
		}
	}
}

// exactMetrics turns the target's exact judge into const metrics. Caller
// holds t.mu.
func (t *target) exactMetrics(sink collector.Sink, engine snapshot.Engine) {
	if t.exact == nil {
		return
	}
	e := string(engine)
	if e == "" {
		e = "unknown"
	}
	d, sloD := t.exactD, t.sloD
	cm := func(desc *prometheus.Desc, vt prometheus.ValueType, v float64, lv ...string) {
		sink.Sample(desc, vt, v, collector.Labels(lv...))
	}
	for _, m := range t.exact.Models() {
		for _, s := range m.SLOs {
			if !s.Supported {
				continue
			}
			for _, set := range []struct {
				c       *goodput.ExactCounts
				sampled string
				bound   string
			}{{&s.Exact, "false", BoundExact}, {&s.Sample, "true", BoundSampled}} {
				c := set.c
				if c.Requests == 0 && c.Unjudged == 0 {
					continue
				}
				for k, o := range s.Objectives {
					cm(d.objRequests, prometheus.CounterValue, c.Objectives[k].Judged, e, m.Model, s.SLO, string(o.Kind), set.sampled)
					cm(d.objGood, prometheus.CounterValue, c.Objectives[k].Good, e, m.Model, s.SLO, string(o.Kind), set.sampled)
				}
				cm(d.requests, prometheus.CounterValue, c.Requests, e, m.Model, s.SLO, set.sampled)
				cm(d.tokens, prometheus.CounterValue, c.Tokens, e, m.Model, s.SLO, set.sampled)
				cm(d.unjudged, prometheus.CounterValue, c.Unjudged, e, m.Model, s.SLO, set.sampled)
				cm(sloD.goodReq, prometheus.CounterValue, c.GoodRequests, e, m.Model, s.SLO, set.bound)
				cm(sloD.goodTok, prometheus.CounterValue, c.GoodTokens, e, m.Model, s.SLO, set.bound)
			}
			if b := t.bounds[m.Model+"\x00"+s.SLO]; b != nil && b.verdict >= 0 {
				v := b.verdict
				cm(d.within, prometheus.GaugeValue, v, e, m.Model, s.SLO)
			}
		}
	}
}

// Fold implements otlp.Dest: it judges a resource's requests against the
// target's SLOs. A request without a model takes the target's configured
// traces model, else the one model its /metrics report; otherwise it is
// dropped as no_model.
func (t *target) Fold(reqs []goodput.TracedRequest, drop func(string)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exact == nil { // replaced by a reload since it was matched
		for range reqs {
			drop(otlp.ResultUnmatched)
		}
		return
	}
	fixed := ""
	if t.cfg.Traces != nil {
		fixed = t.cfg.Traces.Model
	}
	only := ""
	if s := t.state.snap; s != nil && len(s.Models) == 1 {
		only = s.Models[0].Name
	}
	for i := range reqs {
		r := &reqs[i]
		switch {
		case fixed != "":
			r.Model = fixed
		case r.Model == "":
			r.Model = only
		}
		if r.Model == "" {
			drop(otlp.ResultNoModel)
			continue
		}
		// A model the engine has not shown gets one of a few slots of its
		// own, so that made-up names cannot lock the real models out.
		fold := t.exact.FoldUnshown
		if fixed != "" || t.tracker.Model(r.Model) != nil {
			fold = t.exact.Fold
		}
		if !fold(r) {
			drop(otlp.ResultModelLimit)
		}
	}
}

// Match implements otlp.Sink. A target is chosen, in this order, by its
// explicit selector (traces.service_name against the resource's
// service.name), by its pod and namespace against the resource's
// k8s.pod.name and k8s.namespace.name, by the host name of its URL against
// the resource's host.name, or by the sender's address against the IP of
// its URL. At each step exactly one target must match; two are
// ambiguous and nothing is guessed. Targets with a selector are matched by
// it alone.
func (e *Exporter) Match(res *otlp.Resource) (otlp.Dest, string) {
	targets := e.sortedTargets()
	pick := func(ok func(t *target) bool) (otlp.Dest, string, bool) {
		var found *target
		for _, t := range targets {
			if ok(t) {
				if found != nil {
					return nil, otlp.ResultAmbiguous, true
				}
				found = t
			}
		}
		if found == nil {
			return nil, "", false
		}
		return found, "", true
	}
	if res.ServiceName != "" {
		if d, why, done := pick(func(t *target) bool {
			return t.cfg.Traces != nil && t.cfg.Traces.ServiceName == res.ServiceName
		}); done {
			return d, why
		}
	}
	if res.Pod != "" && res.Namespace != "" {
		if d, why, done := pick(func(t *target) bool {
			return t.cfg.Traces == nil && t.cfg.Pod == res.Pod && t.cfg.Namespace == res.Namespace
		}); done {
			return d, why
		}
	}
	if res.Host != "" {
		if d, why, done := pick(func(t *target) bool {
			return t.cfg.Traces == nil && t.hname != "" && strings.EqualFold(t.hname, res.Host)
		}); done {
			return d, why
		}
	}
	if res.Peer.IsValid() && !res.Peer.IsLoopback() {
		if d, why, done := pick(func(t *target) bool {
			return t.cfg.Traces == nil && t.host == res.Peer
		}); done {
			return d, why
		}
	}
	return nil, otlp.ResultUnmatched
}

// urlHost is the host of a target URL: its IP address, or its name when
// it is not an address.
func urlHost(raw string) (netip.Addr, string) {
	u, err := url.Parse(raw)
	if err != nil {
		return netip.Addr{}, ""
	}
	h := u.Hostname()
	if h == "" {
		return netip.Addr{}, ""
	}
	if ip := net.ParseIP(h); ip != nil {
		a, _ := netip.AddrFromSlice(ip)
		return a.Unmap(), ""
	}
	return netip.Addr{}, h
}
