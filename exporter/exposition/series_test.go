package exposition

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// A histogram whose bounds change is rebuilt with the new buckets; a
// series sent twice in one render is an error, as in the registry; a
// series no longer sent leaves the family, and an empty family goes.
func TestSeriesCacheLayoutDuplicatesAndRemoval(t *testing.T) {
	c := NewSeriesCache()
	desc := prometheus.NewDesc("h_seconds", "h", []string{"model"}, nil)
	g := prometheus.NewDesc("g", "g", []string{"model"}, nil)
	render := func(emit func(collector.Sink)) (string, error) {
		var out string
		var gerr error
		c.Gather(emit, func(mfs []*dto.MetricFamily, err error) {
			out, gerr = testbody.Text(t, mfs), err
		})
		return out, gerr
	}
	h1 := &snapshot.Histogram{Bounds: []float64{1, 2}, Cumulative: []float64{1, 3}, Count: 4, Sum: 5}
	h2 := &snapshot.Histogram{Bounds: []float64{0.5, 1, 2}, Cumulative: []float64{0, 2, 2}, Count: 2, Sum: 1.5}
	out, err := render(func(s collector.Sink) {
		s.Histogram(desc, h1, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 7, collector.Labels("a"))
	})
	if err != nil || !strings.Contains(out, `h_seconds_bucket{model="a",le="2"} 3`) || !strings.Contains(out, `g{model="a"} 7`) {
		t.Fatalf("first render (err %v):\n%s", err, out)
	}
	out, err = render(func(s collector.Sink) {
		s.Histogram(desc, h2, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 8, collector.Labels("a"))
		s.Sample(g, prometheus.GaugeValue, 9, collector.Labels("a"))
	})
	for _, want := range []string{`h_seconds_bucket{model="a",le="0.5"} 0`, `h_seconds_bucket{model="a",le="1"} 2`, `h_seconds_count{model="a"} 2`, `g{model="a"} 8`} {
		if !strings.Contains(out, want) {
			t.Errorf("after a layout change, %q missing:\n%s", want, out)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "collected twice") {
		t.Errorf("a series sent twice: err = %v", err)
	}
	out, err = render(func(s collector.Sink) { s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("b")) })
	if err != nil || out != "# HELP g g\n# TYPE g gauge\ng{model=\"b\"} 1\n" {
		t.Errorf("after removal (err %v):\n%s", err, out)
	}
	if len(c.series) != 1 || len(c.fams) != 1 || len(c.descs) != 1 {
		t.Errorf("cache holds %d series, %d families, %d descriptors; want 1 each", len(c.series), len(c.fams), len(c.descs))
	}
	// A label set that does not fit the descriptor is an error for that
	// series alone.
	_, err = render(func(s collector.Sink) {
		s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("b"))
		s.Sample(g, prometheus.GaugeValue, 1, collector.Labels("c", "extra"))
	})
	if err == nil {
		t.Error("a wrong label count was not reported")
	}
}

// The cache guesses each series from the order of the last render; the
// guess must never give another series' entry. Series sent in another
// order, one that leaves and comes back, and a new one in between: each
// render is what a fresh cache (no guesses) gives for the same series,
// and its values are the ones sent (worked by hand in want).
func TestSeriesCacheGuessesNeverMislead(t *testing.T) {
	a := prometheus.NewDesc("a", "a", []string{"x"}, nil)
	b := prometheus.NewDesc("b", "b", []string{"x"}, nil)
	type sample struct {
		d *prometheus.Desc
		x string
		v float64
	}
	renders := []struct {
		send []sample
		want string
	}{
		{[]sample{{a, "1", 1}, {a, "2", 2}, {b, "1", 3}}, "a{x=\"1\"} 1\na{x=\"2\"} 2\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 3\n"},
		{[]sample{{b, "1", 4}, {a, "2", 5}, {a, "1", 6}}, "a{x=\"1\"} 6\na{x=\"2\"} 5\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 4\n"},
		{[]sample{{a, "1", 7}, {b, "1", 8}}, "a{x=\"1\"} 7\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 8\n"},
		{[]sample{{a, "1", 10}, {a, "2", 9}, {a, "3", 12}, {b, "1", 11}}, "a{x=\"1\"} 10\na{x=\"2\"} 9\na{x=\"3\"} 12\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 11\n"},
		{[]sample{{a, "1", 13}, {a, "2", 14}, {a, "3", 15}, {b, "1", 16}}, "a{x=\"1\"} 13\na{x=\"2\"} 14\na{x=\"3\"} 15\n# HELP b b\n# TYPE b gauge\nb{x=\"1\"} 16\n"},
	}
	render := func(c *SeriesCache, send []sample) string {
		var out string
		c.Gather(func(s collector.Sink) {
			for _, x := range send {
				s.Sample(x.d, prometheus.GaugeValue, x.v, collector.Labels(x.x))
			}
		}, func(mfs []*dto.MetricFamily, err error) {
			if err != nil {
				t.Fatal(err)
			}
			out = testbody.Text(t, mfs)
		})
		return out
	}
	c := NewSeriesCache()
	for i, r := range renders {
		got := render(c, r.send)
		if fresh := render(NewSeriesCache(), r.send); got != fresh {
			t.Fatalf("render %d:\n%s\na fresh cache:\n%s", i, got, fresh)
		}
		if want := "# HELP a a\n# TYPE a gauge\n" + r.want; got != want {
			t.Fatalf("render %d:\n%s\nwant:\n%s", i, got, want)
		}
	}
}

// A label pair (a target's name, a model's) is kept once however many
// series carry it, and the pairs of series that left are not kept: label
// values new every render (a hostile engine's) leave at most about twice
// the live pairs behind, where every pair ever seen would be kept
// otherwise. Every render is still the registry's text.
func TestLabelPairsAreSharedAndPruned(t *testing.T) {
	c := NewSeriesCache()
	descs := []*prometheus.Desc{
		prometheus.NewDesc("a", "a", []string{"target", "model"}, nil),
		prometheus.NewDesc("b", "b", []string{"target", "model"}, nil),
		prometheus.NewDesc("c", "c", []string{"target", "model"}, nil),
	}
	emit := func(models []string) func(collector.Sink) {
		return func(s collector.Sink) {
			for _, d := range descs {
				for i, m := range models {
					s.Sample(d, prometheus.GaugeValue, float64(i), collector.Labels("t", m))
				}
			}
		}
	}
	models := make([]string, 50)
	for i := range models {
		models[i] = fmt.Sprintf("model-%02d", i)
	}
	checkTextRound(t, c, emit(models))
	pairs := map[*dto.LabelPair]bool{}
	for _, s := range c.series {
		for _, lp := range s.m.Label {
			pairs[lp] = true
		}
	}
	if len(c.series) != 150 || len(pairs) != 51 {
		t.Fatalf("150 series of one target and 50 models hold %d distinct label pairs, want 51 (%d series)", len(pairs), len(c.series))
	}
	const live = 2000
	most := 0
	for round := range 12 {
		churn := make([]string, live/len(descs)+1)
		for i := range churn {
			churn[i] = fmt.Sprintf("%s-%d-%d", strings.Repeat("v", 64), round, i)
		}
		checkTextRound(t, c, emit(churn))
		most = max(most, len(c.pairs))
	}
	// The live series carry len(churn)+1 pairs; without pruning the map
	// would hold every round's, about 8,000.
	if bound := 2*(live/len(descs)+2) + minPairs; most > bound {
		t.Errorf("after label values new every render, up to %d label pairs kept; want at most %d", most, bound)
	}
}
