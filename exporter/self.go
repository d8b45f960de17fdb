package exporter

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// selfMetrics are the daemon's own lifetime facts.
type selfMetrics struct {
	scrapeDuration  *prometheus.GaugeVec
	scrapeErrors    *prometheus.CounterVec
	reloadOK        prometheus.Gauge
	reloadTimestamp prometheus.Gauge
	renderDuration  prometheus.Gauge
	renderErrors    prometheus.Counter
	bodyBytes       *prometheus.GaugeVec
	discontinuities *prometheus.CounterVec
	duplicates      *prometheus.CounterVec
}

func newSelfMetrics(reg prometheus.Registerer) *selfMetrics {
	m := &selfMetrics{
		scrapeDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "goodput_exporter_target_scrape_duration_seconds",
			Help: "Duration of the last scrape of an engine target: fetch, parse and normalize.",
		}, []string{"target"}),
		scrapeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "goodput_exporter_target_scrape_errors_total",
			Help: "Failed scrapes of an engine target by reason: timeout, connect, http_status, body_too_large, redirect, read, parse, unknown_engine, multiple_engines (the URL answers from more than one engine process).",
		}, []string{"target", "reason"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_config_last_reload_successful",
			Help: "1 when the last configuration load succeeded; a failed reload keeps the running configuration.",
		}),
		reloadTimestamp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful configuration load.",
		}),
		renderDuration: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_render_duration_seconds",
			Help: "Time taken to gather and encode the last exposition served on /metrics.",
		}),
		renderErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "goodput_exporter_render_errors_total",
			Help: "Renders of /metrics in which a collector reported an error; the rest of the exposition was still served.",
		}),
		bodyBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "goodput_exporter_target_body_bytes",
			Help: "Size of the last (decompressed) /metrics body read from an engine target.",
		}, []string{"target"}),
		discontinuities: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "goodput_exporter_series_discontinuities_total",
			Help: "Engine series the goodput layer did not simply continue, per model and series each time: reset (went down to at most half: counted as a fresh start), glitch (went down by less than half: nothing added), layout_change (a histogram's bucket bounds changed: its baseline starts again), layout_unstable (the bounds changed more than twice in ten scrapes: left out of SLO judging).",
		}, []string{"target", "reason"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "goodput_exporter_target_duplicate_samples_total",
			Help: "Samples of a series already read earlier in the same engine body; the first sample is kept, as Prometheus does.",
		}, []string{"target"}),
	}
	reg.MustRegister(m.scrapeDuration, m.scrapeErrors, m.reloadOK, m.reloadTimestamp, m.renderDuration, m.renderErrors, m.bodyBytes, m.discontinuities, m.duplicates)
	return m
}

// init starts every error reason of a target at zero, so that rate() sees
// the first failure.
func (m *selfMetrics) init(target string) {
	for _, r := range collector.ScrapeReasons {
		m.scrapeErrors.WithLabelValues(target, r)
	}
	for _, r := range goodput.DiscontinuityKinds {
		m.discontinuities.WithLabelValues(target, r)
	}
	m.duplicates.WithLabelValues(target)
}

// forget drops the series of a target that is no longer configured: one
// lookup per series, never a scan of every target's (DeletePartialMatch
// made removing n targets cost n × all series).
func (m *selfMetrics) forget(target string) {
	m.scrapeDuration.DeleteLabelValues(target)
	m.bodyBytes.DeleteLabelValues(target)
	for _, r := range collector.ScrapeReasons {
		m.scrapeErrors.DeleteLabelValues(target, r)
	}
	for _, r := range goodput.DiscontinuityKinds {
		m.discontinuities.DeleteLabelValues(target, r)
	}
	m.duplicates.DeleteLabelValues(target)
}
