package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// ParseOptions tune one target's parser.
type ParseOptions struct {
	// DefaultModel is the model label for series that carry none.
	DefaultModel string
	// ModelLimit caps distinct models; 0 means no cap.
	ModelLimit int
}

// Parser turns /metrics bodies of one engine into snapshots. It keeps a
// cache keyed by the raw text of each series (what Prometheus' scrape loop
// does), so a steady target costs one map lookup per sample and no
// allocation. A Parser is not safe for concurrent use: keep one per target.
type Parser struct {
	tab   *table
	opts  ParseOptions
	st    *labels.SymbolTable
	cache map[string]*slot
	// canon maps a series' identity (its sorted labels) to its slot, so
	// that the same series written twice with its labels in another order
	// is recognised as a duplicate rather than learnt as a second series.
	canon  map[string]*slot
	models map[string]*modelAcc
	gen    uint32
	lbls   labels.Labels
	// deadline, when set, bounds one Parse: a body that takes longer (say,
	// tens of thousands of new series every scrape) is abandoned.
	deadline time.Time
	// dirty is set when a parse was abandoned after learning series: the
	// next sweep must look at everything.
	dirty bool

	// slowOnly turns the text fast path off (tests compare the two).
	slowOnly bool
	// cacheText: what cache and comments hold was learnt from text-format
	// bodies (the fast path's condition for trusting it).
	cacheText bool
	// comments are the comment lines (HELP, TYPE, others) that textparse
	// accepted, whole with their newline, for the fast path.
	comments map[string]*commentSlot
	scratch  []byte // a line with its TYPE context, for textparse

	// per-parse state
	learnt         []string // series first seen in this parse
	transient      []string // series read in this parse, not remembered after it
	cachedBytes    int      // the text of the series cached (an upper bound between sweeps)
	refused        int      // series longer than maxSeriesBytes, left out
	refusedName    string   // the first one's metric name
	learntComments []string // comment lines first seen in this parse
	entries        int      // entries read, as textparse counts them
	last           []byte   // the last series read, for error messages
	cseen          int      // distinct comment lines seen
	head           slot     // before the first series: head.next is a guess
	prev           *slot    // the slot of the last series read
	arena          []byte   // the last text body's series, in order (see slot)
	agen           uint32   // the arena's generation
	marks          []mark   // the series read in this body, for the arena
	rebuild        bool     // a series read has no text in the arena: rebuild it
	misses         int      // series found elsewhere than guessed
	fastHits       int      // lines the fast path read (for tests)
	mtype          model.MetricType
	seen           int
	dropped        int
	droppedModel   string
	procStart      float64
	procSeen       bool
	dupes          int
	dupeSeries     string
	shortened      int    // series whose model or reason was shortened
	shortValue     string // the first such value, shortened
	errs           []error
}

// slot is what the parser learnt about one series the first time it saw it.
type slot struct {
	gen    uint32
	ref    sampleRef // ref.src nil: not part of the contract
	model  *modelAcc
	bucket int // index into the histogram accumulator, -1 for +Inf
	reason string
	proc   bool   // process_start_time_seconds
	cut    string // a model or reason value shortened (CapLabelValue), as shortened
	// transient: in the cache for this parse only (to see duplicates),
	// forgotten when it ends (see maxCachedSeries); never a guess.
	transient bool
	over      string
	canon     string // the series' sorted labels, its key in Parser.canon
	err       error  // the series is unusable; reported on every parse
	// next is the slot of the series that followed this one in the last
	// body, and at and alen where that body's text of this series is in
	// the parser's arena (of generation agen): the fast path checks that
	// guess before it hashes a line. dead: the slot left the cache (or one
	// of its spellings did), so it is no longer a guess to trust; while a
	// slot is not dead, the text in the arena is a key of the cache that
	// leads to this slot.
	next     *slot
	at, alen int32
	agen     uint32
	dead     bool
}

// NewParser returns a parser for one engine.
func NewParser(e snapshot.Engine, opts ParseOptions) (*Parser, error) {
	tab, ok := tables[e]
	if !ok {
		return nil, fmt.Errorf("unknown engine %q", e)
	}
	if opts.DefaultModel == "" {
		opts.DefaultModel = "unknown"
	}
	return &Parser{
		tab:      tab,
		opts:     opts,
		st:       labels.NewSymbolTable(),
		cache:    map[string]*slot{},
		canon:    map[string]*slot{},
		comments: map[string]*commentSlot{},
		agen:     1, // a new slot's generation, 0, is never the arena's
		models:   map[string]*modelAcc{},
	}, nil
}

// Engine is the engine this parser reads.
func (p *Parser) Engine() snapshot.Engine { return p.tab.engine }

// SetDeadline bounds the following parses; the zero time removes the
// bound. A parse past it fails with an error that wraps
// context.DeadlineExceeded.
func (p *Parser) SetDeadline(t time.Time) { p.deadline = t }

// deadlineEvery is how many entries are parsed between two looks at the
// clock: a few milliseconds of work at most, even for entries textparse
// reads and learns one by one (a body of new series every scrape).
const deadlineEvery = 256

// What one target's parser reads and remembers. A series (or comment
// line) longer than maxSeriesBytes is left out unread, with an error
// naming its family: label values are cut to 512 bytes anyway
// (snapshot.CapLabelValue), and reading a hostile engine's 256 KiB names
// costs several copies of each. A series learnt when the parser
// remembers maxCachedSeries series, or maxCachedBytes of their text,
// already (and a comment line past the same limits) is read on every
// body and forgotten when it ends: the target then costs more CPU a
// scrape (bounded by its timeout), never more memory. So one target's
// lasting parse state is at most about 3 × maxCachedBytes (a series'
// text as the cache's key, its sorted labels, and its copy in the
// arena) plus maxCachedSeries slots of about 200 bytes: about 16 MiB.
// Real engines write a few hundred to a few thousand series of about a
// hundred bytes (the vLLM capture of the fleet figure: 664 series,
// 90 KiB of series text).
const (
	maxSeriesBytes  = 16 << 10
	maxCachedSeries = 20000
	maxCachedBytes  = 4 << 20
)

// Parse reads one body. contentType selects Prometheus text 0.0.4 or
// OpenMetrics 1.0 (empty means text). A malformed body is an error and
// yields no snapshot; a family that is present but unusable (a histogram
// cut short) is left out and reported in Snapshot.Errors.
//
// A text body takes a fast path line by line (see parseText); OpenMetrics
// and every line the fast path does not know go through textparse.
func (p *Parser) Parse(body []byte, contentType string, now time.Time) (*snapshot.Snapshot, error) {
	tp, err := textparse.New(body, contentType, p.st, textparse.ParserOptions{
		FallbackContentType:     "text/plain",
		OpenMetricsSkipSTSeries: true,
	})
	if tp == nil {
		return nil, fmt.Errorf("unsupported content type: %w", err)
	}
	_, text := tp.(*textparse.PromParser)
	// The fast path keeps offsets in int32: a body past 2 GiB (a cap set
	// that high) is read by textparse alone.
	text = text && !p.slowOnly && len(body) <= math.MaxInt32
	if text != p.cacheText && !p.slowOnly {
		// What the cache holds was learnt from the other format: the fast
		// path may trust only series and comments the text lexer accepted.
		p.resetCache()
		p.cacheText = text
	}
	p.begin()
	defer func() { p.last = nil }() // a slice of body: do not keep it
	if text {
		if err = p.parseText(body); err != nil {
			clear(p.marks)
			p.marks, p.rebuild, p.misses = p.marks[:0], false, 0
		}
	} else {
		err = p.readEntries(tp, 0)
	}
	if err != nil {
		p.forgetLearnt()
		p.forgetTransient()
		return nil, err
	}
	p.forgetTransient()
	snap := p.finish(now)
	if text {
		p.rebuildArena(body)
	}
	return snap, nil
}

// resetCache forgets every learnt series and comment line (not the
// models' accumulators): the next parse learns them again.
func (p *Parser) resetCache() {
	if len(p.cache) == 0 && len(p.comments) == 0 {
		return
	}
	p.cache = map[string]*slot{}
	p.canon = map[string]*slot{}
	p.comments = map[string]*commentSlot{}
	p.head.next = nil
	p.cachedBytes = 0
	p.agen++
	p.dirty = true
}

// readEntries is textparse's loop over tp, whose first skip entries were
// read already (by the fast path).
func (p *Parser) readEntries(tp textparse.Parser, skip int) error {
	for {
		et, err := tp.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return p.syntaxError(err)
		}
		if skip > 0 {
			skip--
			continue
		}
		if err := p.count(); err != nil {
			return err
		}
		if et != textparse.EntrySeries {
			continue
		}
		series, _, v := tp.Series()
		if len(series) > maxSeriesBytes {
			p.refuse(series)
			continue
		}
		p.last = series
		s := p.cache[string(series)]
		if s == nil {
			s = p.learnSeries(tp, series)
		}
		p.follow(s)
		p.apply(s, v, series)
	}
}

// follow records that s comes after the previous series, as a guess for
// the next body.
func (p *Parser) follow(s *slot) {
	if s.transient || s.dead {
		return // gone after this parse: no guess, and nothing to keep it alive
	}
	p.prev.next = s
	p.prev = s
}

// count counts one entry read and looks at the clock every deadlineEvery.
func (p *Parser) count() error {
	p.entries++
	if p.entries%deadlineEvery == 0 && !p.deadline.IsZero() && time.Now().After(p.deadline) {
		return fmt.Errorf("parsing stopped after %d entries: %w", p.entries, context.DeadlineExceeded)
	}
	return nil
}

func (p *Parser) syntaxError(err error) error {
	if p.last == nil {
		return fmt.Errorf("malformed exposition at entry %d (before any sample): %w", p.entries+1, err)
	}
	return fmt.Errorf("malformed exposition at entry %d, after series %.120s: %w", p.entries+1, p.last, err)
}

// forgetTransient drops the series that were to be remembered for one
// parse only (see maxCachedSeries); their values were applied already.
func (p *Parser) forgetTransient() {
	for _, k := range p.transient {
		s := p.cache[k]
		if s == nil || !s.transient {
			continue
		}
		if p.canon[s.canon] == s {
			delete(p.canon, s.canon)
		}
		if s.gen == p.gen {
			p.seen-- // sweep compares what was seen with what is cached
		}
		s.dead = true
		delete(p.cache, k)
	}
	clear(p.transient)
	if cap(p.transient) > 1024 {
		p.transient = nil
	} else {
		p.transient = p.transient[:0]
	}
}

// forgetLearnt drops the series first seen in a parse that failed, so that
// a target serving garbage cannot grow the cache.
func (p *Parser) forgetLearnt() {
	p.dirty = p.dirty || len(p.learnt) > 0
	for _, k := range p.learnt {
		s := p.cache[k]
		if s != nil && s.canon != "" && p.canon[s.canon] == s {
			delete(p.canon, s.canon)
		}
		if s != nil {
			if !s.transient && !s.dead {
				p.cachedBytes -= len(k)
			}
			s.dead = true
		}
		delete(p.cache, k)
	}
	for _, k := range p.learntComments {
		delete(p.comments, k)
	}
}

func (p *Parser) begin() {
	p.gen++
	p.learnt = p.learnt[:0]
	p.learntComments = p.learntComments[:0]
	p.entries, p.last, p.cseen, p.fastHits = 0, nil, 0, 0
	p.prev = &p.head
	p.seen, p.dropped, p.droppedModel = 0, 0, ""
	p.procStart, p.procSeen = 0, false
	p.dupes, p.dupeSeries = 0, ""
	p.shortened, p.shortValue = 0, ""
	p.refused, p.refusedName = 0, ""
	p.errs = nil
}

// learnSeries learns a series seen for the first time and counts its
// text against maxCachedBytes when it is cached.
func (p *Parser) learnSeries(tp textparse.Parser, series []byte) *slot {
	s := p.learn(tp, series)
	if !s.transient && !s.dead {
		p.cachedBytes += len(series)
	}
	return s
}

// refuse leaves out a series longer than maxSeriesBytes, unread.
func (p *Parser) refuse(series []byte) {
	if p.refused == 0 {
		name := series
		if i := bytes.IndexAny(name, "{ \t"); i >= 0 {
			name = name[:i]
		}
		p.refusedName = string(name[:min(len(name), 128)])
	}
	p.refused++
}

// learn classifies a series seen for the first time.
func (p *Parser) learn(tp textparse.Parser, series []byte) *slot {
	key := string(series)
	p.learnt = append(p.learnt, key)
	tp.Labels(&p.lbls)
	canon := p.lbls.String()
	if s := p.canon[canon]; s != nil {
		// The same series spelt differently (labels in another order):
		// one slot, so that the second sample is seen as a duplicate.
		p.cache[key] = s
		if s.transient {
			p.transient = append(p.transient, key)
		}
		return s
	}
	s := &slot{bucket: -1, canon: canon}
	p.canon[canon] = s
	if len(p.cache) >= maxCachedSeries || p.cachedBytes+len(key) > maxCachedBytes {
		s.transient = true
		p.transient = append(p.transient, key)
	}
	name := p.lbls.Get(labels.MetricName)
	if name == "process_start_time_seconds" {
		s.proc = true
		p.cache[key] = s
		return s
	}
	ref, ok := p.tab.samples[name]
	if !ok {
		for _, sel := range p.tab.selected[name] {
			if p.lbls.Get(sel.key) == sel.value {
				ref, ok = sel.ref, true
				break
			}
		}
	}
	if !ok {
		p.cache[key] = s
		return s
	}
	model := ""
	for _, k := range p.tab.modelLabels {
		if model = p.lbls.Get(k); model != "" {
			break
		}
	}
	if model == "" {
		model = p.opts.DefaultModel
	}
	// Every series of the model carries its name: a hostile engine's
	// 256 KiB names would make /metrics a thousand times larger.
	if short, cut := snapshot.CapLabelValue(model); cut {
		model, s.cut = short, short
	}
	for _, k := range p.tab.reasonLabels {
		if s.reason = p.lbls.Get(k); s.reason != "" {
			break
		}
	}
	if ref.src.kind == kindFinished {
		if p.tab.reasonOf != nil {
			reason, keep := p.tab.reasonOf(ref.src.reason, p.lbls.Get)
			if !keep {
				// Not a finished request in the contract's sense: left
				// out, like a series the table does not know.
				p.cache[key] = s
				return s
			}
			s.reason = reason
		}
		if s.reason == "" {
			s.reason = ref.src.reason
		}
		if s.reason == "" {
			s.reason = "unknown"
		}
	}
	if short, cut := snapshot.CapLabelValue(s.reason); cut {
		s.reason = short
		if s.cut == "" {
			s.cut = short
		}
	}
	acc := p.models[model]
	if acc == nil {
		if p.opts.ModelLimit > 0 && len(p.models) >= p.opts.ModelLimit {
			s.over = model
			p.cache[key] = s
			return s
		}
		acc = newModelAcc(model, len(p.tab.sources))
		p.models[model] = acc
	}
	s.ref, s.model = ref, acc
	if ref.src.kind == kindHist {
		acc.hist(ref.src.id)
	}
	if ref.part == partBucket {
		le := p.lbls.Get(labels.BucketLabel)
		bound, err := strconv.ParseFloat(le, 64)
		switch {
		case err != nil || math.IsNaN(bound):
			s.err = &FamilyError{Family: ref.src.family, Model: model, Err: fmt.Errorf("bucket with le=%q is not a number; the bucket is left out", le)}
			s.ref = sampleRef{}
		case !math.IsInf(bound, +1):
			if ref.src.scale != 0 {
				bound *= ref.src.scale
			}
			i, ok := acc.hist(ref.src.id).boundIndex(bound)
			if !ok {
				// Past the cap the histogram is left out anyway: the
				// series is not kept (neither cached nor a guess for the
				// fast path), so that a body of 50,000 bounds, new ones
				// every scrape, costs its parse and no lasting state.
				s.bucket, s.dead = overflowBucket, true
				delete(p.canon, canon)
				p.learnt = p.learnt[:len(p.learnt)-1]
				return s
			}
			s.bucket = i
		}
	}
	p.cache[key] = s
	return s
}

func (p *Parser) apply(s *slot, v float64, series []byte) {
	if s.gen == p.gen {
		// A series already read in this body: Prometheus keeps the first
		// sample and counts the rest; summing them would double a value.
		p.dupes++
		if p.dupeSeries == "" {
			p.dupeSeries = string(series)
		}
		return
	}
	s.gen = p.gen
	p.seen++
	if s.cut != "" {
		p.shortened++
		if p.shortValue == "" {
			p.shortValue = s.cut
		}
	}
	switch {
	case s.err != nil:
		p.errs = append(p.errs, s.err)
	case s.ref.src != nil:
		s.model.add(p.gen, s, v)
	case s.proc:
		p.procStart, p.procSeen = v, true
	case s.over != "":
		p.dropped++
		p.droppedModel = s.over
	}
}

// finish builds the snapshot and forgets series and models that were not
// in this body (an engine restart or a version change renames them).
func (p *Parser) finish(now time.Time) *snapshot.Snapshot {
	snap := &snapshot.Snapshot{Engine: p.tab.engine, Time: now}
	if p.procSeen {
		snap.ProcessStart = p.procStart
	}
	for _, acc := range p.models {
		if acc.gen != p.gen {
			continue
		}
		m, errs := acc.build(p.tab, p.gen)
		snap.Models = append(snap.Models, m)
		p.errs = append(p.errs, errs...)
	}
	slices.SortFunc(snap.Models, func(a, b snapshot.Model) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	if p.dropped > 0 {
		p.errs = append(p.errs, &FamilyError{Model: p.droppedModel, Err: fmt.Errorf("%d series left out: more than %d models on one target (model_limit)", p.dropped, p.opts.ModelLimit)})
	}
	if p.refused > 0 {
		p.errs = append(p.errs, &FamilyError{Family: p.refusedName, Err: fmt.Errorf("%d series left out unread: longer than %d bytes (engines write about a hundred)", p.refused, maxSeriesBytes)})
	}
	snap.Errors = p.errs
	snap.Duplicates, snap.DuplicateSeries = p.dupes, p.dupeSeries
	snap.Shortened, snap.ShortenedValue = p.shortened, p.shortValue
	p.sweep()
	p.sweepComments()
	return snap
}

func (p *Parser) sweep() {
	if p.seen == len(p.cache) && !p.dirty {
		return
	}
	p.dirty = false
	for k, s := range p.cache {
		if s.gen != p.gen {
			delete(p.cache, k)
			s.dead = true
		}
	}
	for k, s := range p.canon {
		if s.gen != p.gen {
			delete(p.canon, k)
			s.dead = true
		}
	}
	removed := false
	for name, acc := range p.models {
		if acc.gen != p.gen {
			delete(p.models, name)
			removed = true
		}
	}
	p.compactBounds()
	if removed {
		// Room for models that were over the limit: let them be learnt again.
		for k, s := range p.cache {
			if s.over != "" {
				delete(p.cache, k)
				delete(p.canon, s.canon)
				s.dead = true
			}
		}
	}
	p.cachedBytes = 0
	for k, s := range p.cache {
		if !s.transient {
			p.cachedBytes += len(k)
		}
	}
}

// compactBounds drops bucket bounds that were not in this body (an old
// layout) from every histogram, so that a layout that keeps changing
// cannot grow the parser's state, and moves the live series' slots.
func (p *Parser) compactBounds() {
	type key struct {
		acc *modelAcc
		id  int
	}
	var moves map[key][]int
	for _, acc := range p.models {
		for id, h := range acc.hists {
			if h == nil {
				continue
			}
			if moved := h.compact(p.gen); moved != nil {
				if moves == nil {
					moves = map[key][]int{}
				}
				moves[key{acc, id}] = moved
			}
		}
	}
	if moves == nil {
		return
	}
	var drop map[*slot]bool
	for k, s := range p.canon {
		if s.ref.src == nil || s.ref.part != partBucket || s.model == nil {
			continue
		}
		moved, ok := moves[key{s.model, s.ref.src.id}]
		switch {
		case !ok:
		case s.bucket >= 0 && moved[s.bucket] >= 0:
			s.bucket = moved[s.bucket]
		case s.bucket >= 0 || s.bucket == overflowBucket:
			// Over the cap when learnt (room was made now), or its bound
			// is gone: learn it again on its next appearance.
			if drop == nil {
				drop = map[*slot]bool{}
			}
			drop[s] = true
			delete(p.canon, k)
		}
	}
	if drop != nil {
		for raw, s := range p.cache {
			if drop[s] {
				delete(p.cache, raw)
				s.dead = true
			}
		}
	}
}

// FamilyError is a problem with one family of one model: the family is left
// out of the snapshot, everything else stands.
type FamilyError struct {
	Family string
	Model  string
	Err    error
}

func (e *FamilyError) Error() string {
	if e.Family == "" {
		return fmt.Sprintf("model %q: %v", e.Model, e.Err)
	}
	return fmt.Sprintf("%s (model %q): %v", e.Family, e.Model, e.Err)
}

func (e *FamilyError) Unwrap() error { return e.Err }
