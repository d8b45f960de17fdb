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
	// kindAux is an engine family that feeds no contract signal by itself:
	// the table's post function derives one from it (TGI's KV ratio from
	// two token gauges).
	kindAux
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
	// match, when set, selects one series of a family by a label value
	// (Triton's nv_trt_llm_request_metrics{request_type="active"}): the
	// family then feeds several signals, one per selector value.
	match [2]string
	// reason is the finish reason of a finished-request family whose
	// series carry none (TGI's tgi_request_success: "success").
	reason string
	// scale converts a histogram's unit to seconds: bounds and sum are
	// multiplied by it (Triton's millisecond histograms: 0.001). Zero is 1.
	scale float64
	// removed, when set, says which change removed the family from the
	// engine: it is still read from older versions, but current ones do
	// not have it (Current leaves it out).
	removed string
}

// gone marks a source as removed from the engine's current versions.
func (s *source) gone(by string) *source { s.removed = by; return s }

// name is how the source is written in HELP texts and errors: the family,
// with its selector when it has one.
func (s *source) name() string {
	if s.match[0] == "" {
		return s.family
	}
	return s.family + `{` + s.match[0] + `="` + s.match[1] + `"}`
}

// selected is a source reached through a label selector.
type selected struct {
	key, value string
	ref        sampleRef
}

// derived names a contract signal that a table's post function computes,
// and from what, for HELP texts and the support matrix.
type derived struct {
	kind  kind
	field int
	from  string
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
	// reasonOf, when set, maps a finished-request series' labels to a
	// contract finish reason (get reads one label; "" when absent); false
	// leaves the series out (a request refused before it ran: vLLM never
	// counts those either).
	reasonOf func(fixed string, get func(string) string) (string, bool)
	sources  []*source
	samples  map[string]sampleRef  // exposed sample name -> source and part
	selected map[string][]selected // exposed sample name -> sources by selector
	// post adjusts a finished model (derived signals an engine gives
	// indirectly); aux reads a kindAux source by name().
	post    func(m *snapshot.Model, aux func(name string) (float64, bool))
	derived []derived
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

// finishedAs is a finished-request family whose series carry no reason.
func finishedAs(family, reason string, a agg) *source {
	return &source{family: family, kind: kindFinished, agg: a, reason: reason}
}

func aux(family string, a agg) *source {
	return &source{family: family, kind: kindAux, agg: a}
}

// where selects one series of s's family by label key=value.
func where(s *source, key, value string) *source {
	s.match = [2]string{key, value}
	return s
}

// newTable indexes sources by every sample name they expose. aliasPrefixes
// maps an engine prefix to alternative spellings of it (SGLang's "sglang:"
// re-exported as "sglang_").
func newTable(t table, aliasPrefixes map[string][]string) *table {
	t.samples = map[string]sampleRef{}
	t.selected = map[string][]selected{}
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
			if s.match[0] != "" {
				t.selected[n] = append(t.selected[n], selected{s.match[0], s.match[1], sampleRef{s, partValue}})
				continue
			}
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
func (t *table) familiesFor(k kind, field int) []string { return t.families(k, field, true) }

// families lists the sources and derivations of one contract signal;
// withRemoved false leaves out the families current versions removed.
func (t *table) families(k kind, field int, withRemoved bool) []string {
	var out []string
	for _, s := range t.sources {
		if s.kind == k && (k == kindFinished || s.field == field) && (withRemoved || s.removed == "") {
			out = append(out, s.name())
		}
	}
	for _, d := range t.derived {
		if d.kind == k && d.field == field {
			out = append(out, d.from)
		}
	}
	return out
}

var tables = map[snapshot.Engine]*table{
	snapshot.VLLM:     vllmTable,
	snapshot.SGLang:   sglangTable,
	snapshot.LlamaCPP: llamacppTable,
	snapshot.TGI:      tgiTable,
	snapshot.Triton:   tritonTable,
	snapshot.TRTLLM:   trtllmTable,
	snapshot.Dynamo:   dynamoTable,
}
