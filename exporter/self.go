package exporter

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// selfMetrics are the daemon's own lifetime facts. The per-target ones
// (scrape duration and errors, body size, discontinuities, duplicates) are
// kept here per target name and sent through the series cache like every
// engine series: through client_golang's registry they cost a render of
// about 0.7 s at 10,000 targets. The daemon-wide ones stay in the registry.
type selfMetrics struct {
	reloadOK        prometheus.Gauge
	reloadTimestamp prometheus.Gauge
	renderDuration  prometheus.Gauge
	renderErrors    prometheus.Counter
	targetsLeftOut  prometheus.Gauge

	scrapeDuration  *prometheus.Desc
	scrapeErrors    *prometheus.Desc
	bodyBytes       *prometheus.Desc
	implausible     *prometheus.Desc
	discontinuities *prometheus.Desc
	duplicates      *prometheus.Desc
	shortened       *prometheus.Desc
	leftOut         *prometheus.Desc

	mu      sync.Mutex
	targets map[string]*targetCounters
}

// targetCounters are one target's own series. A target rebuilt by a
// reload under the same name keeps them, as a labelled series of a
// registry would; they go when the name leaves the configuration.
type targetCounters struct {
	mu          sync.Mutex
	duration    float64
	durationSet bool
	body        float64
	bodySet     bool
	implaus     float64
	implausSet  bool
	errors      []float64          // by collector.ScrapeReasons
	otherErrors map[string]float64 // a reason not in collector.ScrapeReasons
	disc        []float64          // by goodput.DiscontinuityKinds
	otherDisc   map[string]float64
	dupes       float64
	shortened   float64
	leftOut     []float64 // by collector.LeftOutReasons
}

func newSelfMetrics(reg prometheus.Registerer) *selfMetrics {
	m := &selfMetrics{
		scrapeDuration: prometheus.NewDesc("goodput_exporter_target_scrape_duration_seconds",
			"Duration of the last scrape of an engine target: fetch, parse and normalize.",
			[]string{"target"}, nil),
		scrapeErrors: prometheus.NewDesc("goodput_exporter_target_scrape_errors_total",
			"Failed scrapes of an engine target by reason: timeout, connect, http_status, body_too_large, redirect, read, parse, unknown_engine, multiple_engines (the URL answers from more than one engine process), wrong_engine (the body holds none of the configured engine's families but another engine's), no_families (none of the engine's families and no other engine's), self_scrape (the URL is a goodput-exporter's own /metrics).",
			[]string{"target", "reason"}, nil),
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
		targetsLeftOut: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_targets_left_out",
			Help: "Discovered targets not scraped because the daemon runs --collect.max-targets already (the configured ones come first).",
		}),
		renderErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "goodput_exporter_render_errors_total",
			Help: "Renders of /metrics in which a collector reported an error; the rest of the exposition was still served.",
		}),
		implausible: prometheus.NewDesc("goodput_exporter_target_implausible_series",
			"Engine series of a target whose increase in the last scrape was refused as implausible (more than the engine could have done in the interval, such as a rank reporting 1.7e308): nothing added for them. A target can be up (llm_up 1) with some of its series refused; 0 when none.",
			[]string{"target"}, nil),
		bodyBytes: prometheus.NewDesc("goodput_exporter_target_body_bytes",
			"Size of the last (decompressed) /metrics body read from an engine target.",
			[]string{"target"}, nil),
		discontinuities: prometheus.NewDesc("goodput_exporter_series_discontinuities_total",
			"Engine series the goodput layer did not simply continue, per model and series each time: reset (went down to at most half: counted as a fresh start), glitch (went down where no restart explains it, by less than half or by any amount under an unchanged process start time: nothing added), layout_change (a histogram's bucket bounds changed: its baseline starts again), layout_unstable (the bounds changed more than twice in ten scrapes: left out of SLO judging), implausible (rose by more than the engine could have in the interval: nothing added).",
			[]string{"target", "reason"}, nil),
		duplicates: prometheus.NewDesc("goodput_exporter_target_duplicate_samples_total",
			"Samples of a series already read earlier in the same engine body; the first sample is kept, as Prometheus does.",
			[]string{"target"}, nil),
		shortened: prometheus.NewDesc("goodput_exporter_target_shortened_label_values_total",
			"Series of an engine body whose model name or finish reason was longer than 512 bytes and was shortened to its first bytes, an ellipsis and 16 hex digits of its SHA-256; counted on every scrape.",
			[]string{"target"}, nil),
		leftOut: prometheus.NewDesc("goodput_exporter_target_series_left_out_total",
			"Series of an engine body left out unread, by reason: state_budget (the target's parse state is at its budget; the family is left out for the series' model), model_limit (a model past the target's model_limit, or past its room under --collect.max-models), too_long (a series longer than 16 KiB); counted on every scrape.",
			[]string{"target", "reason"}, nil),
		targets: map[string]*targetCounters{},
	}
	reg.MustRegister(m.reloadOK, m.reloadTimestamp, m.renderDuration, m.renderErrors, m.targetsLeftOut)
	return m
}

// init returns a target's counters, every error reason starting at zero
// so that rate() sees the first failure; a name seen before keeps its
// counts.
func (m *selfMetrics) init(target string) *targetCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.targets[target]
	if c == nil {
		c = &targetCounters{
			errors:  make([]float64, len(collector.ScrapeReasons)),
			disc:    make([]float64, len(goodput.DiscontinuityKinds)),
			leftOut: make([]float64, len(collector.LeftOutReasons)),
		}
		m.targets[target] = c
	}
	return c
}

// forget drops the series of a target that is no longer configured.
func (m *selfMetrics) forget(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.targets, target)
}

func (c *targetCounters) scraped(d float64) {
	c.mu.Lock()
	c.duration, c.durationSet = d, true
	c.mu.Unlock()
}

// implausibleSeries sets the series refused as implausible in the last
// successful scrape.
func (c *targetCounters) implausibleSeries(n int) {
	c.mu.Lock()
	c.implaus, c.implausSet = float64(n), true
	c.mu.Unlock()
}

func (c *targetCounters) bodySize(n float64) {
	c.mu.Lock()
	c.body, c.bodySet = n, true
	c.mu.Unlock()
}

func (c *targetCounters) scrapeError(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(collector.ScrapeReasons, reason); i >= 0 {
		c.errors[i]++
		return
	}
	if c.otherErrors == nil {
		c.otherErrors = map[string]float64{}
	}
	c.otherErrors[reason]++
}

func (c *targetCounters) discontinuity(kind string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(goodput.DiscontinuityKinds, kind); i >= 0 {
		c.disc[i]++
		return
	}
	if c.otherDisc == nil {
		c.otherDisc = map[string]float64{}
	}
	c.otherDisc[kind]++
}

func (c *targetCounters) duplicated(n int) {
	c.mu.Lock()
	c.dupes += float64(n)
	c.mu.Unlock()
}

func (c *targetCounters) shortenedValues(n int) {
	c.mu.Lock()
	c.shortened += float64(n)
	c.mu.Unlock()
}

// leftOutSeries adds a body's series left out, by reason.
func (c *targetCounters) leftOutSeries(by map[string]int) {
	c.mu.Lock()
	for i, r := range collector.LeftOutReasons {
		c.leftOut[i] += float64(by[r])
	}
	c.mu.Unlock()
}

// emit sends every target's own series to s (the series cache sorts them).
func (m *selfMetrics) emit(s collector.Sink) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, c := range m.targets {
		c.mu.Lock()
		if c.durationSet {
			s.Sample(m.scrapeDuration, prometheus.GaugeValue, c.duration, collector.Labels(name))
		}
		if c.bodySet {
			s.Sample(m.bodyBytes, prometheus.GaugeValue, c.body, collector.Labels(name))
		}
		if c.implausSet {
			s.Sample(m.implausible, prometheus.GaugeValue, c.implaus, collector.Labels(name))
		}
		for i, r := range collector.ScrapeReasons {
			s.Sample(m.scrapeErrors, prometheus.CounterValue, c.errors[i], collector.Labels(name, r))
		}
		for r, v := range c.otherErrors {
			s.Sample(m.scrapeErrors, prometheus.CounterValue, v, collector.Labels(name, r))
		}
		for i, k := range goodput.DiscontinuityKinds {
			s.Sample(m.discontinuities, prometheus.CounterValue, c.disc[i], collector.Labels(name, k))
		}
		for k, v := range c.otherDisc {
			s.Sample(m.discontinuities, prometheus.CounterValue, v, collector.Labels(name, k))
		}
		s.Sample(m.duplicates, prometheus.CounterValue, c.dupes, collector.Labels(name))
		s.Sample(m.shortened, prometheus.CounterValue, c.shortened, collector.Labels(name))
		for i, r := range collector.LeftOutReasons {
			s.Sample(m.leftOut, prometheus.CounterValue, c.leftOut[i], collector.Labels(name, r))
		}
		c.mu.Unlock()
	}
}
