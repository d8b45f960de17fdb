package exporter

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/exporter/exposition"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// The per-target series, now sent through the series cache, are byte for
// byte what the registry gave when they were client_golang vectors: the
// reference below is those vectors, registered and driven the way the
// daemon drove them (every reason started at zero by init, the duration
// and body size only once a scrape set them), for two targets, one of
// them forgotten later, and a third never scraped.
func TestTargetCountersMatchRegistry(t *testing.T) {
	m := newSelfMetrics(prometheus.NewRegistry())
	ref := prometheus.NewPedanticRegistry()
	dur := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodput_exporter_target_scrape_duration_seconds", Help: "Duration of the last scrape of an engine target: fetch, parse and normalize."}, []string{"target"})
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_target_scrape_errors_total", Help: "Failed scrapes of an engine target by reason: timeout, connect, http_status, body_too_large, redirect, read, parse, unknown_engine, multiple_engines (the URL answers from more than one engine process), wrong_engine (the body holds none of the configured engine's families but another engine's), no_families (none of the engine's families and no other engine's), self_scrape (the URL is a goodput-exporter's own /metrics)."}, []string{"target", "reason"})
	body := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodput_exporter_target_body_bytes", Help: "Size of the last (decompressed) /metrics body read from an engine target."}, []string{"target"})
	disc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_series_discontinuities_total", Help: "Engine series the goodput layer did not simply continue, per model and series each time: reset (went down to at most half: counted as a fresh start), glitch (went down where no restart explains it, by less than half or by any amount under an unchanged process start time: nothing added), layout_change (a histogram's bucket bounds changed: its baseline starts again), layout_unstable (the bounds changed more than twice in ten scrapes: left out of SLO judging), implausible (rose by more than the engine could have in the interval: nothing added)."}, []string{"target", "reason"})
	dup := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_target_duplicate_samples_total", Help: "Samples of a series already read earlier in the same engine body; the first sample is kept, as Prometheus does."}, []string{"target"})
	short := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_target_shortened_label_values_total", Help: "Series of an engine body whose model name or finish reason was longer than 512 bytes and was shortened to its first bytes, an ellipsis and 16 hex digits of its SHA-256; counted on every scrape."}, []string{"target"})
	left := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "goodput_exporter_target_series_left_out_total", Help: "Series of an engine body left out unread, by reason: state_budget (the target's parse state is at its budget; the family is left out for the series' model), model_limit (a model past the target's model_limit, or past its room under --collect.max-models), too_long (a series longer than 16 KiB); counted on every scrape."}, []string{"target", "reason"})
	implaus := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "goodput_exporter_target_implausible_series", Help: "Engine series of a target whose increase in the last scrape was refused as implausible (more than the engine could have done in the interval, such as a rank reporting 1.7e308): nothing added for them. A target can be up (llm_up 1) with some of its series refused; 0 when none."}, []string{"target"})
	ref.MustRegister(dur, errs, body, disc, dup, short, left, implaus)
	start := func(name string) *targetCounters {
		for _, r := range collector.ScrapeReasons {
			errs.WithLabelValues(name, r)
		}
		for _, k := range goodput.DiscontinuityKinds {
			disc.WithLabelValues(name, k)
		}
		dup.WithLabelValues(name)
		short.WithLabelValues(name)
		for _, r := range collector.LeftOutReasons {
			left.WithLabelValues(name, r)
		}
		return m.init(name)
	}
	a, b, gone := start("a"), start(`b "quoted"\`), start("gone")
	start("idle")
	a.scraped(0.25)
	dur.WithLabelValues("a").Set(0.25)
	a.bodySize(81234)
	body.WithLabelValues("a").Set(81234)
	a.implausibleSeries(0)
	implaus.WithLabelValues("a").Set(0)
	b.implausibleSeries(2)
	implaus.WithLabelValues(`b "quoted"\`).Set(2)
	for range 3 {
		b.scrapeError(collector.ReasonTimeout)
		errs.WithLabelValues(`b "quoted"\`, collector.ReasonTimeout).Inc()
	}
	b.scrapeError("a reason added later")
	errs.WithLabelValues(`b "quoted"\`, "a reason added later").Inc()
	b.bodySize(0)
	body.WithLabelValues(`b "quoted"\`).Set(0)
	a.discontinuity(goodput.DiscontinuityGlitch)
	disc.WithLabelValues("a", goodput.DiscontinuityGlitch).Inc()
	a.duplicated(2)
	dup.WithLabelValues("a").Add(2)
	b.shortenedValues(40)
	short.WithLabelValues(`b "quoted"\`).Add(40)
	a.leftOutSeries(map[string]int{collector.LeftOutModelLimit: 300, collector.LeftOutStateBudget: 7})
	a.leftOutSeries(map[string]int{collector.LeftOutModelLimit: 300})
	left.WithLabelValues("a", collector.LeftOutModelLimit).Add(600)
	left.WithLabelValues("a", collector.LeftOutStateBudget).Add(7)
	gone.scraped(1)
	m.forget("gone")
	for _, r := range collector.ScrapeReasons {
		errs.DeleteLabelValues("gone", r)
	}
	for _, k := range goodput.DiscontinuityKinds {
		disc.DeleteLabelValues("gone", k)
	}
	dup.DeleteLabelValues("gone")
	short.DeleteLabelValues("gone")
	for _, r := range collector.LeftOutReasons {
		left.DeleteLabelValues("gone", r)
	}
	// A target rebuilt under the same name keeps its counts.
	if m.init("a") != a {
		t.Error("init of a known name gave new counters")
	}

	want, err := ref.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := exposition.NewSeriesCache()
	for i := range 2 { // learning, then steady
		var got string
		c.Gather(m.emit, func(mfs []*dto.MetricFamily, err error) {
			if err != nil {
				t.Fatal(err)
			}
			got = testbody.Text(t, mfs)
		})
		if w := testbody.Text(t, want); got != w {
			t.Fatalf("render %d:\n%s\nthe registry:\n%s", i, got, w)
		}
		if i == 1 {
			promtool.CheckMetrics(t, []byte(got))
		}
	}
}
