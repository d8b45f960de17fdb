package exporter

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

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

// exactTolerance is how far, in share of requests, the exact goodput may
// sit outside the histogram bounds before the self-check says no: the two
// count slightly different populations (spans reach the daemon after the
// engine's export delay, and a histogram is judged from the first scrape
// while traces count from the daemon's start).
const exactTolerance = 0.01

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
			"Self-check where both exist: 1 when the exact share of requests meeting the SLO (from traces, since the daemon started) lies within the histogram bounds' share over the same time, give or take 0.01; 0 when it does not.", []string{"engine", "model", "slo"}, cl),
	}
}

// boundSums add up, per model and SLO, the requests the histogram bounds
// judged and their good-request bounds, for the self-check.
type boundSums struct {
	requests float64
	good     goodput.Bounds
}

// noteBounds adds the last interval's histogram outcome to the sums the
// self-check reads. Caller holds t.mu.
func (t *target) noteBounds() {
	if t.exact == nil {
		return
	}
	// Traced models come and go like scraped ones: forgotten after the
	// same hour without a request, and their self-check sums with them.
	if t.exact.Forget(forgetModelsAfter) > 0 {
		for key := range t.bounds {
			model, _, _ := strings.Cut(key, "\x00")
			if t.exact.Model(model) == nil {
				delete(t.bounds, key)
			}
		}
	}
	for _, ms := range t.tracker.Models() {
		if t.exact.Model(ms.Model) == nil {
			continue
		}
		for _, ss := range ms.SLOs {
			in := ss.Joint.Interval
			if !in.OK || ss.Joint.RequestsSource == "" {
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
			b.requests += in.Requests
			b.good.Lower += in.Good.Requests.Lower
			b.good.Upper += in.Good.Requests.Upper
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
			if b := t.bounds[m.Model+"\x00"+s.SLO]; b != nil && b.requests > 0 && s.Exact.Requests > 0 {
				share := s.Exact.GoodRequests / s.Exact.Requests
				in := share >= b.good.Lower/b.requests-exactTolerance && share <= b.good.Upper/b.requests+exactTolerance
				v := 0.0
				if in {
					v = 1
				}
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
