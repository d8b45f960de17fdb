package diagnosis

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// capture parses one of the real llama-server b11669 captures kept with
// the collector's fixtures (PROVENANCE.md there), taken at time at.
func capture(t *testing.T, name string, at time.Time) *snapshot.Snapshot {
	t.Helper()
	b, err := os.ReadFile("../collector/testdata/fixtures/llamacpp/llamacpp-b11669-0.7.0-debian-" + name + ".prom")
	if err != nil {
		t.Fatal(err)
	}
	p, err := collector.NewParser(snapshot.LlamaCPP, collector.ParseOptions{DefaultModel: "m0", ModelLimit: 10})
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Parse(b, "", at)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The mean times per token llama.cpp's own timing gives, between the
// light-load and overload captures of one server, by hand:
// (427.229 − 86.4955) s / (47552 − 14208) tokens = 10.2187 ms per
// generated token; (57.3891 − 16.7748) s / (46180 − 13779) computed
// prompt tokens = 1.25349 ms per prompt token. Over an interval in which
// no request completed (the same capture twice) there is no mean; a
// restart counts the new process's totals (86.4955 s / 14208 tokens);
// a time counter that went down without a restart leaves the interval
// out; an engine without timing has none.
func TestTimePerTokenFromLlamaCPPCaptures(t *testing.T) {
	light, over := capture(t, "light-load", t0), capture(t, "overload", t0.Add(time.Minute))
	approx := func(what string, got Value, want float64) {
		t.Helper()
		if !got.OK || math.Abs(got.V-want) > 1e-9 {
			t.Errorf("%s = %v, want %.9g", what, got, want)
		}
	}
	sig := func(ss ...sample) Signals { return compute(ss, Value{}, Objectives{}) }
	first := newSample(t0, nil, light, nil)
	s := sig(first, newSample(t0.Add(time.Minute), light, over, nil))
	approx("time per output token", s.TimePerOutputTokenMean, 340.7335/33344)
	approx("time per prompt token", s.TimePerPromptTokenMean, 40.6143/32401)

	again := capture(t, "light-load", t0.Add(time.Minute))
	if s := sig(first, newSample(t0.Add(time.Minute), light, again, nil)); s.TimePerOutputTokenMean.OK || s.TimePerPromptTokenMean.OK {
		t.Errorf("no request completed, yet %v and %v", s.TimePerOutputTokenMean, s.TimePerPromptTokenMean)
	}

	restarted := capture(t, "light-load", t0.Add(2*time.Minute))
	restarted.Restarted = true
	s = sig(first, newSample(t0.Add(time.Minute), light, over, nil), newSample(t0.Add(2*time.Minute), over, restarted, nil))
	approx("time per output token across a restart", s.TimePerOutputTokenMean, (340.7335+86.4955)/(33344+14208))

	fell := capture(t, "overload", t0.Add(2*time.Minute))
	fell.Models[0].Timing.GenerationSeconds.V = 1 // down, tokens up: no restart
	s = sig(first, newSample(t0.Add(time.Minute), light, over, nil), newSample(t0.Add(2*time.Minute), over, fell, nil))
	approx("time per output token with a fall left out", s.TimePerOutputTokenMean, 340.7335/33344)

	e := newEngine()
	e.ctr[snapshot.GenerationTokens] = 100
	a := e.snap(t0)
	e.ctr[snapshot.GenerationTokens] = 200
	if s := sig(newSample(t0, nil, a, nil), newSample(t0.Add(time.Minute), a, e.snap(t0.Add(time.Minute)), nil)); s.TimePerOutputTokenMean.OK {
		t.Errorf("an engine without timing: %v", s.TimePerOutputTokenMean)
	}
}

// queue_growth's evidence on an engine without a KV gauge or a request
// count (llama.cpp b11669, overloaded: 4 running, 243 deferred, as in the
// overload capture) says "n/a" for the cache and that its bars are the
// batch's, never a 0 the engine did not report, whether the mode is
// being raised or held.
func TestQueueEvidenceWithoutKVGauge(t *testing.T) {
	w := Signals{Waiting: some(243), WaitingSlope: some(2), Running: some(4), RunningCeiling: some(4), Span: time.Minute}
	th := DefaultThresholds()
	for _, held := range []bool{false, true} {
		ok, why := queueGrowth(&w, &Signals{}, true, held, &th, &Objectives{})
		if !ok || !strings.Contains(why, "KV usage n/a") || strings.Contains(why, "KV usage 0") {
			t.Errorf("held %v: %v %q, want raised with KV usage n/a", held, ok, why)
		}
		if !held && !strings.Contains(why, "no request rate: by the batch of 4.0") {
			t.Errorf("raising: %q, want the bars by the batch", why)
		}
	}
}
