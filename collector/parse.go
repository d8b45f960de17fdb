package collector

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
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
	// StateBudget bounds what the parser remembers between bodies, in
	// bytes (see DefaultStateBudget); 0 means DefaultStateBudget.
	StateBudget int
}

// seriesKey is a 128-bit hash of a series' text (or of its sorted labels,
// or of a comment line): what the parser's maps are keyed by, so that what
// one series costs to remember does not depend on how long its text is.
// The two halves are hash/maphash with seeds drawn when the process
// starts, so an engine cannot write two series that collide on purpose;
// by chance, two of a target's series collide with a probability of
// about n²/2^129 (10^-29 for 100,000 series).
type seriesKey struct{ a, b uint64 }

var keySeeds = [3]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed(), maphash.MakeSeed()}

func keyOf(b []byte) seriesKey {
	return seriesKey{maphash.Bytes(keySeeds[0], b), maphash.Bytes(keySeeds[1], b)}
}

// canonKeyOf hashes a series' sorted labels, with a seed of its own so
// that it never equals a key of raw text.
func canonKeyOf(s string) seriesKey {
	return seriesKey{maphash.String(keySeeds[2], s), maphash.String(keySeeds[1], s)}
}

// Parser turns /metrics bodies of one engine into snapshots. It keeps a
// cache keyed by a hash of the raw text of each series (what Prometheus'
// scrape loop does with the text itself), so a steady target costs one
// hash per sample and no allocation. A Parser is not safe for concurrent
// use: keep one per target.
type Parser struct {
	tab   *table
	opts  ParseOptions
	st    *labels.SymbolTable
	cache map[seriesKey]*slot
	// canon maps a series' identity (its sorted labels) to its slot, so
	// that the same series written twice with its labels in another order
	// is recognised as a duplicate rather than learnt as a second series.
	canon  map[seriesKey]*slot
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
	// accepted, by the key of the whole line with its newline, for the
	// fast path.
	comments map[seriesKey]*commentSlot
	scratch  []byte // a line with its TYPE context, for textparse
	budget   int    // StateBudget or its default

	// per-parse state
	learnt         []seriesKey // series first seen in this parse
	refused        int         // series longer than maxSeriesBytes, left out
	refusedName    string      // the first one's metric name
	left           int         // series left out: the state is at its budget
	leftName       string      // the first one's metric name
	learntComments []seriesKey // comment lines first seen in this parse
	entries        int         // entries read, as textparse counts them
	last           []byte      // the last series read, for error messages
	cseen          int         // distinct comment lines seen
	head           slot        // before the first series: head.next is a guess
	prev           *slot       // the slot of the last series read
	fastHits       int         // lines the fast path read (for tests)
	mtype          model.MetricType
	seen           int
	dropped        int
	droppedModel   string
	droppedRaw     []byte // the model of the last series dropped, in the body (see overLine)
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
	bucket int32     // index into the histogram accumulator, -1 for +Inf
	ref    sampleRef // ref.src nil: not part of the contract
	model  *modelAcc
	reason string
	cut    string    // a model or reason value shortened (CapLabelValue), as shortened
	over   string    // the model, past the model limit (never cached: see Parser.skip)
	key    seriesKey // the key of the text it was learnt from
	canon  seriesKey // the key of its sorted labels, in Parser.canon
	err    error     // the series is unusable; reported on every parse
	// next is the slot of the series that followed this one in the last
	// body: the fast path compares a line's key with that guess's before
	// it looks the key up in the cache. dead: the slot left the cache (or
	// one of its spellings did), so it is no longer a guess to trust.
	next *slot
	proc bool // process_start_time_seconds
	dead bool
	// left: learnt past the state's budget, not cached; its family is
	// left out for its model in this parse.
	left bool
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
	budget := opts.StateBudget
	if budget <= 0 {
		budget = DefaultStateBudget
	}
	return &Parser{
		tab:      tab,
		opts:     opts,
		st:       labels.NewSymbolTable(),
		cache:    map[seriesKey]*slot{},
		canon:    map[seriesKey]*slot{},
		comments: map[seriesKey]*commentSlot{},
		budget:   budget,
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
// costs several copies of each.
//
// What a parser remembers between bodies (its state) is counted in
// bytes against its budget (ParseOptions.StateBudget, DefaultStateBudget
// unless set): a series learnt costs slotCost whatever the length of its
// text (its slot and its keys in the cache and canon maps, hashes, not
// text), a second spelling of one (its labels in another order) keyCost,
// a comment line commentCost. A series of a model past the model limit
// costs nothing: it is not remembered (see overLine). TestStateCostsAreWhatTheBudgetCounts
// measures them on the heap. A series that would take the state past its
// budget is not learnt: it is left out, and so is its family for its
// model in that body (a histogram with some of its buckets would be a
// wrong one), with an error saying so on every body (ErrStateBudget), so
// the target is degraded, never larger. Which series are learnt is the
// order they first came in, so a steady body leaves out the same
// families every scrape. A comment line past the budget is read again on
// every body. Histogram bounds have their own cap (maxBounds a
// histogram), and models theirs (ModelLimit).
//
// The default, 32 MiB, holds about 116,000 series: a body of 100,000
// series (300 models of a vLLM V1 engine) is read entirely from the
// cache. A typical vLLM body of 664 series takes about 200 KiB.
const (
	maxSeriesBytes     = 16 << 10
	DefaultStateBudget = 32 << 20
	slotCost           = 288
	keyCost            = 64
	commentCost        = 96
)

// ErrStateBudget is what a series left out for the state's budget is
// reported with (errors.Is on a snapshot's errors).
var ErrStateBudget = errors.New("the target's parse state is at its budget")

// Why series of a body are left out (Snapshot.LeftOut): the target's
// parse state is at its budget (the series' family is left out for its
// model), the series' model is past model_limit, the series is longer
// than 16 KiB.
const (
	LeftOutStateBudget = "state_budget"
	LeftOutModelLimit  = "model_limit"
	LeftOutTooLong     = "too_long"
)

// LeftOutReasons lists them, so that counters can start at 0.
var LeftOutReasons = []string{LeftOutStateBudget, LeftOutModelLimit, LeftOutTooLong}

// stateBytes is what the parser remembers, as counted against its budget.
func (p *Parser) stateBytes() int {
	return len(p.canon)*slotCost + (len(p.cache)-len(p.canon))*keyCost + len(p.comments)*commentCost
}

// StateBytes is the parser's state as counted against its budget.
func (p *Parser) StateBytes() int { return p.stateBytes() }

// room reports whether the state has room for cost more bytes.
func (p *Parser) room(cost int) bool { return p.stateBytes()+cost <= p.budget }

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
		err = p.parseText(body)
	} else {
		err = p.readEntries(tp, 0)
	}
	if err != nil {
		p.forgetLearnt()
		return nil, err
	}
	return p.finish(now), nil
}

// resetCache forgets every learnt series and comment line (not the
// models' accumulators): the next parse learns them again.
func (p *Parser) resetCache() {
	if len(p.cache) == 0 && len(p.comments) == 0 {
		return
	}
	for _, s := range p.cache {
		s.dead = true
	}
	p.cache = map[seriesKey]*slot{}
	p.canon = map[seriesKey]*slot{}
	p.comments = map[seriesKey]*commentSlot{}
	p.head.next = nil
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
		k := keyOf(series)
		s := p.cache[k]
		if s == nil {
			s = p.learn(tp, series, k)
		}
		p.follow(s)
		p.apply(s, v, series)
	}
}

// follow records that s comes after the previous series, as a guess for
// the next body.
func (p *Parser) follow(s *slot) {
	if s.left || s.dead {
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

// forgetLearnt drops the series first seen in a parse that failed, so that
// a target serving garbage cannot grow the cache.
func (p *Parser) forgetLearnt() {
	p.dirty = p.dirty || len(p.learnt) > 0
	for _, k := range p.learnt {
		// A second spelling of a series learnt before leaves that slot be.
		if s := p.cache[k]; s != nil && s.key == k {
			if p.canon[s.canon] == s {
				delete(p.canon, s.canon)
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
	// What a first body learnt is not kept for the steady ones.
	if cap(p.learnt) > 1024 {
		p.learnt = nil
	}
	if cap(p.learntComments) > 1024 {
		p.learntComments = nil
	}
	p.learnt = p.learnt[:0]
	p.learntComments = p.learntComments[:0]
	p.entries, p.last, p.cseen, p.fastHits = 0, nil, 0, 0
	p.prev = &p.head
	p.seen, p.dropped, p.droppedModel = 0, 0, ""
	p.procStart, p.procSeen = 0, false
	p.dupes, p.dupeSeries = 0, ""
	p.shortened, p.shortValue = 0, ""
	p.refused, p.refusedName = 0, ""
	p.left, p.leftName = 0, ""
	p.droppedRaw = nil
	p.errs = nil
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

// learn classifies a series seen for the first time (key is its text's
// key) and remembers it when the state has room; one past the budget is
// returned with left set, not cached.
func (p *Parser) learn(tp textparse.Parser, series []byte, key seriesKey) *slot {
	tp.Labels(&p.lbls)
	canon := canonKeyOf(p.lbls.String())
	if s := p.canon[canon]; s != nil {
		// The same series spelt differently (labels in another order):
		// one slot, so that the second sample is seen as a duplicate.
		if p.room(keyCost) {
			p.cache[key] = s
			p.learnt = append(p.learnt, key)
		}
		return s
	}
	s := &slot{bucket: -1, key: key, canon: canon, left: !p.room(slotCost)}
	name := p.lbls.Get(labels.MetricName)
	if name == "process_start_time_seconds" {
		s.proc = true
		return p.keep(s)
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
		return p.keep(s)
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
				return p.keep(s)
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
			// Left out, not remembered (overLine finds the next body's
			// without lexing them).
			s.over, s.left, s.dead = model, false, true
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
			if s.left {
				break // no bound learnt for a series that is not kept
			}
			i, ok := acc.hist(ref.src.id).boundIndex(bound)
			if !ok {
				// Past the cap the histogram is left out anyway: the
				// series is not kept (neither cached nor a guess for the
				// fast path), so that a body of 50,000 bounds, new ones
				// every scrape, costs its parse and no lasting state.
				s.bucket, s.dead = overflowBucket, true
				return s
			}
			s.bucket = int32(i)
		}
	}
	return p.keep(s)
}

// keep caches a slot just learnt, unless it is past the budget.
func (p *Parser) keep(s *slot) *slot {
	if s.left {
		return s
	}
	p.cache[s.key] = s
	p.canon[s.canon] = s
	p.learnt = append(p.learnt, s.key)
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
	if s.left {
		// Past the state's budget: the family is left out for the model.
		p.left++
		if p.leftName == "" {
			p.leftName = p.lbls.Get(labels.MetricName)
			if len(p.leftName) > 128 {
				p.leftName = p.leftName[:128]
			}
		}
		if s.model != nil && s.ref.src != nil {
			s.model.leaveOut(p.gen, s.ref.src.id, ErrStateBudget.Error())
		}
		return
	}
	s.gen = p.gen
	if !s.dead {
		p.seen++ // sweep compares what was seen with what is cached
	}
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
		p.droppedModel, p.droppedRaw = s.over, nil
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
		model := p.droppedModel
		if p.droppedRaw != nil {
			model = string(p.droppedRaw)
		}
		p.errs = append(p.errs, &FamilyError{Model: model, Err: fmt.Errorf("%d series left out: more than %d models on one target (model_limit, or what the daemon's cap on models over all targets leaves it)", p.dropped, p.opts.ModelLimit)})
	}
	if p.left > 0 {
		p.errs = append(p.errs, &FamilyError{Family: p.leftName, Err: fmt.Errorf("%d series left out, with their families: %w (%d bytes, %d series remembered)", p.left, ErrStateBudget, p.budget, len(p.canon))})
	}
	if p.refused > 0 {
		p.errs = append(p.errs, &FamilyError{Family: p.refusedName, Err: fmt.Errorf("%d series left out unread: longer than %d bytes (engines write about a hundred)", p.refused, maxSeriesBytes)})
	}
	if p.left > 0 || p.dropped > 0 || p.refused > 0 {
		snap.LeftOut = map[string]int{}
		for r, n := range map[string]int{LeftOutStateBudget: p.left, LeftOutModelLimit: p.dropped, LeftOutTooLong: p.refused} {
			if n > 0 {
				snap.LeftOut[r] = n
			}
		}
	}
	snap.Errors = p.errs
	snap.Duplicates, snap.DuplicateSeries = p.dupes, p.dupeSeries
	snap.Shortened, snap.ShortenedValue = p.shortened, p.shortValue
	p.sweep()
	p.sweepComments()
	return snap
}

func (p *Parser) sweep() {
	p.droppedRaw = nil // a slice of the body: do not keep it
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
	for name, acc := range p.models {
		if acc.gen != p.gen {
			delete(p.models, name) // room for a model over the limit
		}
	}
	p.compactBounds()
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
			s.bucket = int32(moved[s.bucket])
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
