package e2e

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The harness's own parts, without Prometheus: each worked by hand.

func TestSubstitute(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`rate(x{node=~"$node", target=~"$target"}[$__rate_interval])`, `rate(x{node=~".*", target=~".*"}[1m])`},
		{`y{slo=~"${slo}", namespace=~"$namespace"}[$__interval]`, `y{slo=~".*", namespace=~".*"}[1m]`},
		{`sum(z)`, `sum(z)`},
	} {
		if got := substitute(c.in); got != c.want {
			t.Errorf("substitute(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	m := labelValues.FindStringSubmatch(`label_values(up{job="goodput-exporter", node=~"$node"}, instance)`)
	if m == nil || m[1] != `up{job="goodput-exporter", node=~"$node"}` || m[2] != "instance" {
		t.Errorf("label_values parsed as %q", m)
	}
}

// The scripts handed to simulate: simulated time, abort after the levers
// that leave a backlog.
func TestEngineScript(t *testing.T) {
	for _, c := range []struct {
		e    engine
		want string
	}{
		{engine{name: "a", format: "vllm"}, ""},
		{engine{lever: "kv_preemption", onset: 3 * time.Minute, dur: 5 * time.Minute}, "healthy:3m0s,kv_preemption:5m0s,abort,healthy"},
		{engine{lever: "gpu_throttling", onset: 3 * time.Minute, dur: 5 * time.Minute}, "healthy:3m0s,gpu_throttling:5m0s,healthy"},
		{engine{lever: "queue_growth", onset: time.Minute}, "healthy:1m0s,queue_growth"},
	} {
		if got := c.e.script(); got != c.want {
			t.Errorf("script of %+v = %q, want %q", c.e, got, c.want)
		}
	}
	// 3 simulated minutes at 10x are 18 s of wall time.
	if got := wall(3 * time.Minute); got != 18*time.Second {
		t.Errorf("wall(3m) = %v, want 18s", got)
	}
}

// The webhook records each alert of Alertmanager's payload (webhook
// format version 4) and refuses what is not JSON.
func TestWebhook(t *testing.T) {
	w := &webhook{}
	srv := httptest.NewServer(w)
	defer srv.Close()
	body := `{"version":"4","status":"firing","alerts":[
	  {"status":"firing","labels":{"alertname":"LLMQueueGrowth","target":"sglang-1"},"annotations":{"runbook_url":"u/LLMQueueGrowth.md"}},
	  {"status":"resolved","labels":{"alertname":"LLMEngineStall","target":"llamacpp-5"},"annotations":{}}]}`
	resp, err := http.Post(srv.URL, "application/json", bytes.NewBufferString(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %v %v", resp, err)
	}
	resp, _ = http.Post(srv.URL, "application/json", bytes.NewBufferString("not json"))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("garbage answered %d, want 400", resp.StatusCode)
	}
	got := w.find(func(n notification) bool { return n.Labels["target"] == "sglang-1" })
	if len(got) != 1 || got[0].Status != "firing" || got[0].Annotations["runbook_url"] != "u/LLMQueueGrowth.md" {
		t.Errorf("sglang-1: %v", got)
	}
	if got := w.find(func(n notification) bool { return true }); len(got) != 2 || got[1].Status != "resolved" {
		t.Errorf("log %v", got)
	}
	e := engine{name: "sglang-1", alert: "LLMQueueGrowth"}
	ww := &world{hook: w}
	if fired, resolved := ww.firstFiring(e), ww.resolvedAfter(e, time.Time{}); fired == nil || resolved != nil {
		t.Errorf("firstFiring, resolvedAfter = %v, %v; want fired and not resolved", fired, resolved)
	}
}

// gaps finds the stretches without an evaluation: at 1 s evaluations
// from 10 s to 20 s with 14 s and 15 s missing, the gap is 13-16 s (3 s
// is allowed, 3 s is not more); the end counts as a time.
func TestGaps(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	var ts []time.Time
	for s := 10; s <= 20; s++ {
		if s != 14 && s != 15 {
			ts = append(ts, at(s))
		}
	}
	if g := gaps(ts, at(10), at(20), 3*time.Second, start, "q"); g != "" {
		t.Errorf("a 3 s gap reported: %s", g)
	}
	if g := gaps(ts, at(10), at(20), 2*time.Second, start, "q"); !strings.Contains(g, "13s-16s") {
		t.Errorf("a 3 s gap with 2 s allowed: %q, want 13s-16s", g)
	}
	// Nothing after 12 s: a gap to the end.
	if g := gaps(ts[:3], at(10), at(20), 3*time.Second, start, "q"); !strings.Contains(g, "12s-20s") {
		t.Errorf("silent after 12 s: %q, want 12s-20s", g)
	}
	// Nothing at all.
	if g := gaps(nil, at(10), at(20), 3*time.Second, start, "q"); !strings.Contains(g, "10s-20s") {
		t.Errorf("never firing: %q, want 10s-20s", g)
	}
}

// decode reads Prometheus' vector and matrix answers.
func TestDecode(t *testing.T) {
	res, err := decode([]byte(`{"resultType":"matrix","result":[{"metric":{"mode":"queue_growth"},"values":[[1764590000,"1"],[1764590001.5,"0.25"]]}]}`))
	if err != nil || len(res) != 1 || len(res[0].Values) != 2 || res[0].Values[1] != 0.25 || res[0].Times[1].UnixMilli() != 1764590001500 {
		t.Fatalf("matrix: %v %v", res, err)
	}
	res, err = decode([]byte(`{"resultType":"vector","result":[{"metric":{},"value":[1764590000,"3"]}]}`))
	if err != nil || len(res) != 1 || res[0].Values[0] != 3 {
		t.Fatalf("vector: %v %v", res, err)
	}
	if _, err := decode([]byte(`{"resultType":"string","result":[0,"x"]}`)); err == nil {
		t.Error("a string answer decoded")
	}
}
