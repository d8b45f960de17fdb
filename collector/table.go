package collector

import (
	"strings"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// kind says which part of the contract a source feeds.
type kind uint8

const (
	kindGauge kind = iota
	kindCounter
	kindFinished // a counter split by a finish-reason label
	kindHist
)

// agg says how series of one source that differ only in labels the
// contract drops (data-parallel or tensor-parallel ranks) are combined.
type agg uint8

const (
	aggSum agg = iota // independent ranks: add
	aggMax            // replicas of one state, or a pressure ratio: the largest
)

// source is one engine family that feeds one contract signal. When several
// sources feed the same signal, the first one listed that is present wins.
type source struct {
	id     int
	family string // the engine's family name, e.g. vllm:kv_cache_usage_perc
	kind   kind
	field  int // snapshot.Gauge, snapshot.Counter or snapshot.Hist
	agg    agg
	// negativeAbsent: a negative value means "feature off" (vLLM V0 prefix
	// hit rate reports -1 when prefix caching is disabled).
	negativeAbsent bool
}

// part is which sample of a family a series is.
type part uint8

const (
	partValue part = iota
	partBucket
	partSum
	partCount
)

type sampleRef struct {
	src  *source
	part part
}

// table is everything the parser needs to know about one engine.
type table struct {
	engine       snapshot.Engine
	modelLabels  []string // label keys holding the model name, in preference order
	reasonLabels []string // label keys holding a finish reason
	sources      []*source
	samples      map[string]sampleRef // exposed sample name -> source and part
	// post adjusts a finished model (derived signals an engine gives indirectly).
	post func(*snapshot.Model)
}

func gauge(f snapshot.Gauge, family string, a agg) *source {
	return &source{family: family, kind: kindGauge, field: int(f), agg: a}
}

func counter(f snapshot.Counter, family string, a agg) *source {
	return &source{family: family, kind: kindCounter, field: int(f), agg: a}
}

func hist(f snapshot.Hist, family string, a agg) *source {
	return &source{family: family, kind: kindHist, field: int(f), agg: a}
}

func finished(family string, a agg) *source {
	return &source{family: family, kind: kindFinished, agg: a}
}

// newTable indexes sources by every sample name they expose. aliasPrefixes
// maps an engine prefix to alternative spellings of it (SGLang's "sglang:"
// re-exported as "sglang_").
func newTable(t table, aliasPrefixes map[string][]string) *table {
	t.samples = map[string]sampleRef{}
	for i, s := range t.sources {
		s.id = i
		names := []string{s.family}
		for prefix, aliases := range aliasPrefixes {
			if rest, ok := strings.CutPrefix(s.family, prefix); ok {
				for _, a := range aliases {
					names = append(names, a+rest)
				}
			}
		}
		for _, n := range names {
			if s.kind == kindHist {
				t.samples[n+"_bucket"] = sampleRef{s, partBucket}
				t.samples[n+"_sum"] = sampleRef{s, partSum}
				t.samples[n+"_count"] = sampleRef{s, partCount}
				continue
			}
			t.samples[n] = sampleRef{s, partValue}
		}
	}
	return &t
}

// Sources lists, per contract signal, the engine families that feed it, in
// preference order. It is what HELP texts and the support matrix are built
// from.
func (t *table) familiesFor(k kind, field int) []string {
	var out []string
	for _, s := range t.sources {
		if s.kind == k && (k == kindFinished || s.field == field) {
			out = append(out, s.family)
		}
	}
	return out
}

var tables = map[snapshot.Engine]*table{
	snapshot.VLLM:     vllmTable,
	snapshot.SGLang:   sglangTable,
	snapshot.LlamaCPP: llamacppTable,
}
