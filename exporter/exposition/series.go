package exposition

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// SeriesCache keeps one dto.Metric per engine, SLO and cost series between
// renders. A series seen before costs one map lookup and a value update;
// a new one is built once through client_golang (a const metric written
// to dto, so its labels are validated and sorted exactly as the registry
// would), and each family's metrics are re-sorted only when its set of
// series changed. What a render returns is what the registry's Gather
// would return for the same const metrics (TestCachedRenderMatchesRegistry
// in exporter, TestCachedTextMatchesExpfmt here). Its Sample and Histogram
// are the collector.Sink that Gather and GatherText pass to emit.
//
// Building const metrics every render cost about 135,000 allocations for a
// 100-model engine; the registry's consistency checks and sorting as much
// again in CPU.
type SeriesCache struct {
	mu      sync.Mutex
	gen     uint32
	series  map[seriesKey]*cachedSeries
	fams    map[string]*cachedFamily
	descs   map[*prometheus.Desc]*descEntry
	errs    []error
	out     []*dto.MetricFamily
	outFam  []*cachedFamily // out's families, in the same order
	values  []float64       // scratch for writeText
	scratch bytes.Buffer    // scratch for a series' text
	one     dto.MetricFamily
	// textEncodes counts the families encoded through expfmt to cache
	// their text, for tests.
	textEncodes int
	head        cachedSeries  // before the first series: head.next is a guess
	prev        *cachedSeries // the last series sent in this render
	// pairs holds one label pair per name and value, shared by every
	// series that has it (a target's or model's label is on hundreds of
	// its series); pruned to the live series' pairs once it is more than
	// twice what the last pruning kept (prunePairs).
	pairs     map[pairKey]*dto.LabelPair
	pairsKept int
}

type pairKey struct{ name, value string }

// minPairs: the pair map is not pruned below this size.
const minPairs = 4096

type seriesKey struct {
	desc *prometheus.Desc
	lv   collector.LabelValues
}

type cachedSeries struct {
	m   *dto.Metric
	fam *cachedFamily
	key seriesKey
	gen uint32
	// next is the series sent after this one in the last render: emission
	// order is stable, so checking that guess's key saves hashing it.
	// gone: the series left the cache (a guess no longer to trust); while
	// it is not gone, series[key] is this one.
	next *cachedSeries
	gone bool
	// text is each of the series' sample lines, as expfmt wrote them when
	// the series was built, up to and including the space before the
	// value; ends[k] is where line k's part ends. nil: not yet written.
	text []byte
	ends []int32
}

type cachedFamily struct {
	mf      dto.MetricFamily
	members []*cachedSeries
	seen    int // members sent this render
	dirty   bool
	// header: the family's HELP and TYPE lines as expfmt writes them (set
	// by its first series' text); direct: a series' text could not be
	// kept, so the family is encoded through expfmt until its series
	// change.
	header []byte
	direct bool
	// text and ends: the header and each member's kept lines, in order
	// (ends[0]: the header's end; ends[k]: line k's end), joined: they
	// match the members.
	text   []byte
	ends   []int32
	joined bool
}

type descEntry struct {
	fam *cachedFamily // nil: the descriptor is invalid
	err error
	gen uint32
}

// NewSeriesCache returns an empty cache.
func NewSeriesCache() *SeriesCache {
	return &SeriesCache{
		series: map[seriesKey]*cachedSeries{},
		fams:   map[string]*cachedFamily{},
		descs:  map[*prometheus.Desc]*descEntry{},
		pairs:  map[pairKey]*dto.LabelPair{},
	}
}

// Gather runs emit against the cache and passes the families (sorted by
// name, each family's metrics sorted as client_golang sorts them) and the
// errors of this render to use. The families belong to the cache: use
// must not keep them.
func (c *SeriesCache) Gather(emit func(collector.Sink), use func([]*dto.MetricFamily, error)) {
	c.GatherText(emit, func(mfs []*dto.MetricFamily, _ func(*bytes.Buffer, int) error, err error) { use(mfs, err) })
}

// GatherText is Gather that also passes a function writing the text of
// the family at an index of the list, exactly as expfmt.MetricFamilyToText
// would, from the series' cached text (see writeText).
func (c *SeriesCache) GatherText(emit func(collector.Sink), use Use) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.errs = c.errs[:0]
	c.prev = &c.head
	for _, f := range c.fams {
		f.seen = 0
	}
	emit(c)
	c.out = c.out[:0]
	for name, f := range c.fams {
		if f.seen != len(f.members) {
			f.members = slices.DeleteFunc(f.members, func(s *cachedSeries) bool {
				if s.gen != c.gen {
					delete(c.series, s.key)
					s.gone = true
					// A gone series is never read again; its text is
					// part of its family's (join), which a stale
					// guess must not keep alive.
					s.text, s.ends, s.next = nil, nil, nil
					return true
				}
				return false
			})
			f.dirty = true
		}
		if len(f.members) == 0 {
			delete(c.fams, name)
			continue
		}
		if f.dirty {
			slices.SortFunc(f.members, compareSeries)
			f.mf.Metric = f.mf.Metric[:0]
			for _, s := range f.members {
				f.mf.Metric = append(f.mf.Metric, s.m)
			}
			f.dirty = false
			f.direct = false // a new try
			f.joined = false
		}
		c.out = append(c.out, &f.mf)
	}
	for d, de := range c.descs {
		if de.gen != c.gen {
			delete(c.descs, d) // a stopped target's descriptors
		}
	}
	if len(c.pairs) > 2*c.pairsKept+minPairs {
		c.prunePairs()
	}
	slices.SortFunc(c.out, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	c.outFam = c.outFam[:0]
	for _, mf := range c.out {
		c.outFam = append(c.outFam, c.fams[mf.GetName()])
	}
	use(c.out, c.writeText, errors.Join(c.errs...))
	clear(c.outFam) // no family kept alive past its removal
}

// Stats says what a cache's text has cost so far: Encodes, the series
// written through expfmt to keep their lines (a new series, or one whose
// histogram layout changed); Direct, the families, by name, that are
// encoded through expfmt on every render because a series' lines could
// not be kept. A steady render adds to neither.
type Stats struct {
	Encodes int
	Direct  []string
}

// Stats returns the cache's Stats.
func (c *SeriesCache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Encodes: c.textEncodes}
	for name, f := range c.fams {
		if f.direct {
			st.Direct = append(st.Direct, name)
		}
	}
	slices.Sort(st.Direct)
	return st
}

// compareSeries orders metrics as client_golang's registry does: by number
// of labels, then label value by label value (labels sorted by name).
func compareSeries(a, b *cachedSeries) int {
	la, lb := a.m.GetLabel(), b.m.GetLabel()
	if len(la) != len(lb) {
		return len(la) - len(lb)
	}
	for i := range la {
		if c := strings.Compare(la[i].GetValue(), lb[i].GetValue()); c != 0 {
			return c
		}
	}
	return 0
}

// family returns the cached family of desc, learning its name, help and
// type once per descriptor from client_golang itself.
func (c *SeriesCache) family(desc *prometheus.Desc, m prometheus.Metric) *cachedFamily {
	de := c.descs[desc]
	if de == nil {
		de = &descEntry{}
		de.fam, de.err = c.learn(desc, m)
		c.descs[desc] = de
	}
	de.gen = c.gen
	if de.err != nil {
		c.errs = append(c.errs, de.err)
	}
	return de.fam
}

// learn gathers one metric of desc through a registry of its own: the
// family's name, help and type as the registry would export them.
func (c *SeriesCache) learn(desc *prometheus.Desc, m prometheus.Metric) (*cachedFamily, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(oneMetric{desc, m}); err != nil {
		return nil, err
	}
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	if len(mfs) != 1 {
		return nil, fmt.Errorf("descriptor %s gathered as %d families", desc, len(mfs))
	}
	name := mfs[0].GetName()
	f := c.fams[name]
	if f == nil {
		f = &cachedFamily{}
		f.mf.Name, f.mf.Help, f.mf.Type = mfs[0].Name, mfs[0].Help, mfs[0].Type
		c.fams[name] = f
	}
	return f, nil
}

type oneMetric struct {
	desc *prometheus.Desc
	m    prometheus.Metric
}

func (o oneMetric) Describe(ch chan<- *prometheus.Desc) { ch <- o.desc }
func (o oneMetric) Collect(ch chan<- prometheus.Metric) { ch <- o.m }

// add builds a series seen for the first time (or whose histogram layout
// changed) through client_golang.
func (c *SeriesCache) add(k seriesKey, old *cachedSeries, m prometheus.Metric) *cachedSeries {
	pb := &dto.Metric{}
	if err := m.Write(pb); err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: %w", k.desc, err))
		return nil
	}
	f := c.family(k.desc, m)
	if f == nil {
		return nil
	}
	for i, lp := range pb.Label { // the const metric's own pairs, not kept elsewhere
		pb.Label[i] = c.intern(lp)
	}
	if old != nil {
		old.m = pb
		old.text, old.ends = nil, nil // a new bucket layout
		f.dirty = true
		return old
	}
	s := &cachedSeries{m: pb, fam: f, key: k}
	c.series[k] = s
	f.members = append(f.members, s)
	f.dirty = true
	return s
}

// intern returns the pair of lp's name and value that the cache's series
// share, lp itself the first time. Nothing changes a cached series'
// labels: a series whose labels change is another series.
func (c *SeriesCache) intern(lp *dto.LabelPair) *dto.LabelPair {
	k := pairKey{lp.GetName(), lp.GetValue()}
	if p := c.pairs[k]; p != nil {
		return p
	}
	c.pairs[k] = lp
	return lp
}

// prunePairs keeps only the pairs of the cached series: series that come
// and go (a model's churn, label values new every scrape) would otherwise
// leave theirs. It runs once the map has doubled, so its cost, a pass over
// the series, is spread over as many new pairs as it keeps.
func (c *SeriesCache) prunePairs() {
	live := make(map[pairKey]*dto.LabelPair, len(c.pairs)/2)
	for _, s := range c.series {
		for _, lp := range s.m.Label {
			live[pairKey{lp.GetName(), lp.GetValue()}] = lp
		}
	}
	c.pairs, c.pairsKept = live, len(live)
}

// lookup finds the cached series of k: first the one sent after the
// previous series in the last render, else through the map.
func (c *SeriesCache) lookup(k seriesKey) *cachedSeries {
	if g := c.prev.next; g != nil && !g.gone && g.key == k {
		return g
	}
	return c.series[k]
}

// mark records that s was sent in this render; a second send of the same
// series is an error, as in the registry.
func (c *SeriesCache) mark(s *cachedSeries) bool {
	c.prev.next, c.prev = s, s
	if s.gen == c.gen {
		c.twice(s.key) // not k: passing the key to fmt here would move it to the heap on every call
		return false
	}
	s.gen = c.gen
	s.fam.seen++
	return true
}

func (c *SeriesCache) twice(k seriesKey) {
	c.errs = append(c.errs, fmt.Errorf("%s %v: collected twice", k.desc, k.lv.Slice()))
}

// Sample implements collector.Sink.
func (c *SeriesCache) Sample(desc *prometheus.Desc, typ prometheus.ValueType, v float64, lv collector.LabelValues) {
	k := seriesKey{desc, lv}
	s := c.lookup(k)
	if s == nil {
		if s = c.add(k, nil, collector.Metric(desc, typ, v, lv.Slice()...)); s == nil {
			return
		}
	}
	if !c.mark(s) {
		return
	}
	switch {
	case s.m.Gauge != nil:
		*s.m.Gauge.Value = v
	case s.m.Counter != nil:
		*s.m.Counter.Value = v
	case s.m.Untyped != nil:
		*s.m.Untyped.Value = v
	}
}

// Histogram implements collector.Sink.
func (c *SeriesCache) Histogram(desc *prometheus.Desc, h *snapshot.Histogram, lv collector.LabelValues) {
	k := seriesKey{desc, lv}
	s := c.lookup(k)
	if s == nil || !sameBounds(s.m.Histogram, h) {
		if s = c.add(k, s, collector.HistogramMetric(desc, h, lv.Slice()...)); s == nil {
			return
		}
	}
	if !c.mark(s) {
		return
	}
	pb := s.m.Histogram
	*pb.SampleCount = collector.ToCount(h.Count)
	*pb.SampleSum = h.Sum
	for i, b := range pb.Bucket {
		*b.CumulativeCount = collector.ToCount(h.Cumulative[i])
	}
}

// sameBounds reports whether a cached histogram has h's bucket bounds, in
// order (const histograms write their buckets sorted by bound, and a
// snapshot's bounds are strictly ascending).
func sameBounds(pb *dto.Histogram, h *snapshot.Histogram) bool {
	if pb == nil || len(pb.Bucket) != len(h.Bounds) {
		return false
	}
	for i, b := range pb.Bucket {
		if b.GetUpperBound() != h.Bounds[i] {
			return false
		}
	}
	return true
}
