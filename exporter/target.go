package exporter

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// target is one engine endpoint and its collection goroutine.
type target struct {
	cfg     config.Target
	timeout time.Duration
	descs   *collector.Descs
	sloD    *sloDescs
	costD   *prometheus.Desc
	scraper *collector.Scraper
	logger  *slog.Logger
	ex      *Exporter
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex // guards state, tracker, slos, notes, gpu and diag
	state   targetState
	gpu     gpuUsage
	tracker *goodput.Tracker
	slos    []goodput.SLO
	notes   sloNotes
	diag    *diagnosis.Diagnoser // see diagnosis.go
	diagD   *diagDescs
}

// targetState is what the renderer and the landing page read.
type targetState struct {
	snap       *snapshot.Snapshot // latest successful scrape
	attempted  bool
	up         bool
	engine     snapshot.Engine
	lastReason string
	lastErr    string
	lastScrape time.Time
	familyErrs []string
	familyKeys []string // which families failed, without their values: what logging compares
}

func newTarget(tc config.Target, timeout time.Duration, slos []goodput.SLO, e *Exporter) (*target, error) {
	engine := snapshot.Engine("")
	if tc.Engine != "auto" {
		engine = snapshot.Engine(tc.Engine)
	}
	sc, err := collector.NewScraper(collector.ScraperConfig{
		Name:      tc.Name,
		URL:       tc.URL,
		Engine:    engine,
		Timeout:   timeout,
		MaxBody:   int64(tc.MaxBodySize),
		Parse:     collector.ParseOptions{DefaultModel: tc.Model, ModelLimit: tc.ModelLimit},
		Transport: e.transport,
	})
	if err != nil {
		return nil, err
	}
	cl := constLabels(tc)
	tracker := goodput.NewTracker(tc.Name, slos)
	tracker.ForgetAfter(forgetModelsAfter)
	return &target{
		cfg:     tc,
		timeout: timeout,
		descs:   collector.NewDescs(tc.Name, tc.Labels),
		sloD:    newSLODescs(cl),
		costD:   newCostDesc(cl),
		diagD:   newDiagDescs(cl),
		scraper: sc,
		logger:  e.logger.With("target", tc.Name),
		ex:      e,
		state:   targetState{engine: engine},
		tracker: tracker,
		slos:    slos,
	}, nil
}

// forgetModelsAfter is how long a model may be absent from its engine
// before its SLO counters leave the exposition: long enough to ride out a
// restart or a redeploy, short enough that LoRA adapters loaded and
// unloaded all day do not pile up.
const forgetModelsAfter = time.Hour

// constLabels are the labels every series of a target carries.
func constLabels(tc config.Target) prometheus.Labels {
	cl := prometheus.Labels{"target": tc.Name}
	for k, v := range tc.Labels {
		cl[k] = v
	}
	return cl
}

// adopt takes over the goodput state of the target this one replaces
// (which has stopped): the tracker's totals and baselines, the last
// snapshot and the once-only log marks.
func (t *target) adopt(old *target, slos []goodput.SLO) {
	old.mu.Lock()
	tracker, state, notes, diag := old.tracker, old.state, old.notes, old.diag
	old.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker, t.state, t.notes = tracker, state, notes
	if diag != nil {
		t.diag = diag
	}
	t.state.engine = t.scraper.Engine()
	t.tracker.Reconfigure(slos)
	t.slos = slos
}

// reconfigure applies new SLOs, keeping the totals of unchanged objectives.
func (t *target) reconfigure(slos []goodput.SLO) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Reconfigure(slos)
	t.slos = slos
	t.notes = sloNotes{}
}

func (t *target) start(parent context.Context, interval time.Duration, noJitter bool) {
	ctx, cancel := context.WithCancel(parent)
	t.cancel, t.done = cancel, make(chan struct{})
	t.ex.self.init(t.cfg.Name)
	go t.loop(ctx, interval, noJitter)
}

func (t *target) stop() {
	if t.cancel != nil {
		t.cancel()
		<-t.done
	}
}

// loop scrapes on a fixed interval. The first scrape waits a random
// fraction of the interval so that targets (and nodes) do not all hit
// their engines at the same instant.
func (t *target) loop(ctx context.Context, interval time.Duration, noJitter bool) {
	defer close(t.done)
	if !noJitter {
		select {
		case <-ctx.Done():
			return
		case <-time.After(rand.N(interval)):
		}
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		t.scrape(ctx)
		t.ex.render.request()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *target) scrape(ctx context.Context) {
	start := time.Now()
	snap, res, err := t.scraper.Scrape(ctx)
	if ctx.Err() != nil {
		return // shutting down or reconfigured: not the engine's fault
	}
	elapsed := time.Since(start)
	self := t.ex.self
	self.scrapeDuration.WithLabelValues(t.cfg.Name).Set(elapsed.Seconds())
	if res.Bytes > 0 {
		self.bodyBytes.WithLabelValues(t.cfg.Name).Set(float64(res.Bytes))
	}
	if res.Detected != "" {
		t.logger.Info("engine detected", "engine", res.Detected, "url", t.cfg.URL)
	}
	reason := ""
	if err != nil {
		reason = collector.ReasonConnect
		var se *collector.ScrapeError
		if errors.As(err, &se) {
			reason = se.Reason
		}
		self.scrapeErrors.WithLabelValues(t.cfg.Name, reason).Inc()
	}
	if res.Restart != "" {
		t.logger.Warn("engine restarted; counters start again", "why", res.Restart)
	}

	t.mu.Lock()
	prev := t.state
	st := &t.state
	st.attempted, st.lastScrape = true, start
	st.engine = t.scraper.Engine()
	st.up = err == nil
	st.lastReason = reason
	if err != nil {
		st.lastErr = err.Error()
		t.diagnose(start, nil)
	} else {
		st.snap = snap
		st.familyErrs, st.familyKeys = errorStrings(snap.Errors), errorKeys(snap.Errors)
		if err := t.tracker.Update(snap); err != nil {
			t.logger.Error("goodput update", "err", err)
		}
		t.notes.check(t.logger, t.tracker, snap, t.slos)
		t.diagnose(start, snap)
	}
	cur := t.state
	t.mu.Unlock()

	// One log line per change of state, never one per scrape.
	switch {
	case err != nil && (!prev.attempted || prev.up || prev.lastReason != reason):
		t.logger.Warn("target down", "reason", reason, "err", err)
	case err == nil && prev.attempted && !prev.up:
		t.logger.Info("target up again", "engine", cur.engine)
	}
	if err == nil && !slices.Equal(prev.familyKeys, cur.familyKeys) {
		for _, fe := range cur.familyErrs {
			t.logger.Warn("family left out", "err", fe)
		}
	}
}

// errorKeys names the family and model of each error, so that an error
// whose message carries changing values is logged once, not every scrape.
func errorKeys(errs []error) []string {
	var out []string
	for _, e := range errs {
		var fe *collector.FamilyError
		if errors.As(e, &fe) {
			out = append(out, fe.Family+"\x00"+fe.Model)
			continue
		}
		out = append(out, e.Error())
	}
	return out
}

func errorStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

// snapshotState returns a copy of the state for readers.
func (t *target) snapshotState() targetState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}
