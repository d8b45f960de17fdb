package exporter

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/exporter/history"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// target is one engine endpoint and its collection goroutine.
type target struct {
	cfg     config.Target
	timeout time.Duration
	descs   *collector.Descs
	sloD    *sloDescs
	exactD  *exactDescs
	host    netip.Addr // the IP in the URL, for matching trace senders
	hname   string     // the host name in the URL, for matching host.name
	costD   *prometheus.Desc
	scraper *collector.Scraper
	logger  *slog.Logger
	ex      *Exporter
	ctr     *targetCounters // its own series (see selfMetrics)
	cancel  context.CancelFunc
	done    chan struct{}

	mu      sync.Mutex // guards state, tracker, slos, notes, gpu and diag
	state   targetState
	gpu     gpuUsage
	tracker *goodput.Tracker
	slos    []goodput.SLO
	notes   sloNotes
	exact   *goodput.Exact        // judged from request traces
	bounds  map[string]*boundSums // histogram bounds summed, for the self-check
	// discSeen is, per discontinuity (model, series, kind), the update in
	// which it was last seen: a series that keeps glitching is logged when
	// it starts, and again only after it has been quiet for a while.
	discSeen map[string]uint64
	updates  uint64
	diag     *diagnosis.Diagnoser // see diagnosis.go
	diagD    *diagDescs
	capLive  *liveCapacity // see capacity.go
	hist     *history.Ring // the status page's charts
}

// discQuiet is how many updates a discontinuity must be absent before it
// is logged again (five minutes at the default interval).
const discQuiet = 60

// targetState is what the renderer and the status page read.
type targetState struct {
	snap       *snapshot.Snapshot // latest successful scrape
	attempted  bool
	up         bool
	engine     snapshot.Engine
	lastReason string
	lastErr    string
	lastScrape time.Time
	familyErrs []string
	// implausible are the series whose increase the last successful
	// scrape refused as implausible ("model: series").
	implausible []string
	familyKeys  []string // which families failed, without their values: what logging compares
	duplicates  bool     // the last body repeated a series
	shortened   bool     // the last body had label values shortened
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
		Budget:    e.budget,
	})
	if err != nil {
		return nil, err
	}
	cl := constLabels(tc)
	host, hname := urlHost(tc.URL)
	tracker := goodput.NewTracker(tc.Name, slos)
	tracker.ForgetAfter(forgetModelsAfter)
	tracker.KeepAtMost(tc.ModelLimit)
	tracker.SetLimits(e.counterLimits())
	return &target{
		cfg:     tc,
		timeout: timeout,
		descs:   collector.NewDescs(tc.Name, seriesLabels(tc)),
		sloD:    newSLODescs(cl),
		exactD:  newExactDescs(cl),
		host:    host,
		hname:   hname,
		exact:   goodput.NewExact(tc.Name, slos, tc.ModelLimit),
		costD:   newCostDesc(cl),
		diagD:   newDiagDescs(cl),
		scraper: sc,
		logger:  e.logger.With("target", tc.Name),
		ex:      e,
		state:   targetState{engine: engine},
		tracker: tracker,
		slos:    slos,
		hist:    history.New(e.opts.Interval),
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
	for k, v := range seriesLabels(tc) {
		cl[k] = v
	}
	return cl
}

// seriesLabels are a target's labels besides target: its configured
// ones, and the namespace and pod of a statically configured engine pod
// (namespace:, pod:), on its series as Kubernetes discovery puts a
// discovered pod's, so that dashboards and alerts filter both alike.
func seriesLabels(tc config.Target) map[string]string {
	if tc.Namespace == "" || tc.Pod == "" {
		return tc.Labels
	}
	if _, ok := tc.Labels["namespace"]; ok {
		return tc.Labels // discovered: already labelled
	}
	out := make(map[string]string, len(tc.Labels)+2)
	for k, v := range tc.Labels {
		out[k] = v
	}
	out["namespace"], out["pod"] = tc.Namespace, tc.Pod
	return out
}

// adopt takes over the goodput state of the target this one replaces
// (which has stopped): the tracker's totals and baselines, the last
// snapshot and the once-only log marks.
func (t *target) adopt(old *target, slos []goodput.SLO) {
	old.mu.Lock()
	tracker, state, notes, diag := old.tracker, old.state, old.notes, old.diag
	capLive := old.capLive
	exact, bounds, hist := old.exact, old.bounds, old.hist
	old.exact = nil // spans matched to the old target before the swap are dropped, not raced
	old.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker, t.state, t.notes = tracker, state, notes
	t.exact, t.bounds = exact, bounds
	t.capLive = capLive
	if hist != nil {
		hist.Resize(t.ex.opts.Interval)
		t.hist = hist
	}
	t.exact.SetLimit(t.cfg.ModelLimit)
	t.exact.Reconfigure(slos)
	t.tracker.KeepAtMost(t.cfg.ModelLimit)
	if diag != nil {
		t.diag = diag
	}
	t.state.engine = t.scraper.Engine()
	t.tracker.Reconfigure(slos)
	t.slos = slos
}

// reconfigure applies new SLOs, keeping the totals of unchanged objectives
// and the notes already logged (sloNotes logs only what a change alters).
func (t *target) reconfigure(slos []goodput.SLO) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tracker.Reconfigure(slos)
	if t.exact != nil {
		t.exact.Reconfigure(slos)
	}
	t.slos = slos
}

func (t *target) start(parent context.Context, interval time.Duration, noJitter bool) {
	ctx, cancel := context.WithCancel(parent)
	t.cancel, t.done = cancel, make(chan struct{})
	t.ctr = t.ex.self.init(t.cfg.Name)
	go t.loop(ctx, interval, noJitter)
}

func (t *target) stop() {
	t.cancelLoop()
	t.wait()
}

// cancelLoop asks the target's goroutine to stop; wait waits for it.
func (t *target) cancelLoop() {
	if t.cancel != nil {
		t.cancel()
	}
}

func (t *target) wait() {
	if t.done != nil {
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
		t.ex.render.Request()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (t *target) scrape(ctx context.Context) {
	if t.ctr == nil { // a target scraped without start (tests)
		t.ctr = t.ex.self.init(t.cfg.Name)
	}
	start := time.Now()
	t.scraper.SetModelLimit(t.ex.models.reserve(t.cfg.Name, t.cfg.ModelLimit))
	snap, res, err := t.scraper.Scrape(ctx)
	t.ex.models.settle(t.cfg.Name, t.scraper.Models())
	if ctx.Err() != nil {
		return // shutting down or reconfigured: not the engine's fault
	}
	elapsed := time.Since(start)
	t.ctr.scraped(elapsed.Seconds())
	reason := ""
	if err != nil {
		reason = collector.ReasonConnect
		var se *collector.ScrapeError
		if errors.As(err, &se) {
			reason = se.Reason
		}
		t.ctr.scrapeError(reason)
	}
	// A body was read (an empty one too) unless the fetch itself failed.
	switch reason {
	case "", collector.ReasonParse, collector.ReasonUnknownEngine, collector.ReasonWrongEngine, collector.ReasonNoFamilies, collector.ReasonSelfScrape:
		t.ctr.bodySize(float64(res.Bytes))
	}
	if res.Detected != "" {
		t.logger.Info("engine detected", "engine", res.Detected, "url", t.cfg.URL)
	}
	if res.Restart != "" {
		t.logger.Warn("engine restarted; counters start again", "why", res.Restart)
	}
	if res.Baseline != "" {
		t.logger.Warn("another engine process answers; its counts only set the baseline", "why", res.Baseline)
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
		t.hist.Record(start, nil, nil)
	} else {
		st.snap = snap
		st.familyKeys, st.familyErrs = familyErrors(snap.Errors)
		if err := t.tracker.Update(snap); err != nil {
			t.logger.Error("goodput update", "err", err)
		}
		t.capacityObserve(prev.snap, snap)
		t.noteBounds(snap)
		t.notes.check(t.logger, t.tracker, snap, t.slos)
		st.implausible = t.discontinuities()
		t.ctr.implausibleSeries(len(st.implausible))
		if snap.Duplicates > 0 {
			t.ctr.duplicated(snap.Duplicates)
			if !prev.duplicates {
				t.logger.Warn("the engine's body repeats series; the first sample of each is kept", "duplicates", snap.Duplicates, "first", snap.DuplicateSeries)
			}
		}
		st.duplicates = snap.Duplicates > 0
		if snap.Shortened > 0 {
			t.ctr.shortenedValues(snap.Shortened)
			if !prev.shortened {
				t.logger.Warn("the engine's body has label values longer than the cap; they are shortened",
					"cap_bytes", snapshot.MaxLabelValue, "series", snap.Shortened, "first", snap.ShortenedValue[:min(len(snap.ShortenedValue), 80)]+"…")
			}
		}
		st.shortened = snap.Shortened > 0
		if len(snap.LeftOut) > 0 {
			t.ctr.leftOutSeries(snap.LeftOut) // each reason's error is logged as a family left out
		}
		t.diagnose(start, snap)
		t.hist.Record(start, snap, t.tracker)
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
	if err == nil {
		// Only the errors that were not there on the last good scrape.
		for i, k := range cur.familyKeys {
			if _, had := slices.BinarySearch(prev.familyKeys, k); !had {
				t.logger.Warn("family left out", "err", cur.familyErrs[i])
			}
		}
	}
}

// discontinuities counts the tracker's discontinuities of the last update
// and logs each one that has not been seen in the last discQuiet updates.
// It returns the series refused as implausible, "model: series", for the
// target's scrape to report beside llm_up.
func (t *target) discontinuities() []string {
	t.updates++
	var implausible []string
	for _, d := range t.tracker.Discontinuities() {
		t.ctr.discontinuity(d.Kind)
		if d.Kind == goodput.DiscontinuityImplausible {
			implausible = append(implausible, d.Model+": "+d.Series)
		}
		key := d.Model + "\x00" + d.Series + "\x00" + d.Kind
		last, seen := t.discSeen[key]
		if t.discSeen == nil {
			t.discSeen = map[string]uint64{}
		}
		t.discSeen[key] = t.updates
		if seen && t.updates-last <= discQuiet {
			continue
		}
		switch d.Kind {
		case goodput.DiscontinuityReset:
			t.logger.Info("an engine series went down to at most half: counted as a fresh start of that series", "model", d.Model, "series", d.Series)
		case goodput.DiscontinuityGlitch:
			t.logger.Warn("an engine series went down with no restart to explain it (by less than half, or by any amount under an unchanged process start time): nothing added for it this interval", "model", d.Model, "series", d.Series)
		case goodput.DiscontinuityLayoutChange:
			t.logger.Warn("a histogram's bucket bounds changed: its baseline starts again", "model", d.Model, "series", d.Series)
		case goodput.DiscontinuityLayoutUnstable:
			t.logger.Warn("a histogram's bucket bounds keep changing (more than twice in ten scrapes): its objectives are left out of SLO judging until they hold still", "model", d.Model, "series", d.Series)
		}
	}
	if len(t.discSeen) > 0 && t.updates%discQuiet == 0 {
		for k, last := range t.discSeen {
			if t.updates-last > discQuiet {
				delete(t.discSeen, k)
			}
		}
	}
	return implausible
}

// familyErrors returns each error's key, naming its model and family so
// that an error whose message carries changing values is logged once, not
// every scrape, and its message, both sorted by key: the parser meets
// models in map order, so the same errors come in a different order from
// one scrape to the next.
func familyErrors(errs []error) (keys, msgs []string) {
	type kv struct{ k, m string }
	all := make([]kv, 0, len(errs))
	for _, e := range errs {
		k := e.Error()
		var fe *collector.FamilyError
		if errors.As(e, &fe) {
			k = fe.Model + "\x00" + fe.Family
		}
		all = append(all, kv{k, e.Error()})
	}
	slices.SortFunc(all, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	for _, x := range all {
		keys, msgs = append(keys, x.k), append(msgs, x.m)
	}
	return keys, msgs
}

// snapshotState returns a copy of the state for readers.
func (t *target) snapshotState() targetState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// counterLimits is the bound on engine counters' increases for the
// trackers: the ceilings from the options, the scrape interval as the
// shortest time an increase is judged over.
func (e *Exporter) counterLimits() goodput.Limits {
	l := goodput.DefaultLimits
	l.Interval = e.opts.Interval
	pick := func(v float64, dflt float64) float64 {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return dflt
		}
		return v
	}
	l.RequestsPerSecond = pick(e.opts.MaxRequestRate, l.RequestsPerSecond)
	l.TokensPerSecond = pick(e.opts.MaxTokenRate, l.TokensPerSecond)
	return l
}
