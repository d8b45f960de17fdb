package exposition

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// textWorld is a set of series whose presence, values and histogram
// layouts a source of numbers decides, round after round: the state the
// differential test and the fuzz target drive the series cache through.
type textWorld struct {
	next  func() uint64
	descs []textDesc
}

type textDesc struct {
	d    *prometheus.Desc
	typ  prometheus.ValueType
	hist bool
	n    int // label values
}

// Label values that need escaping, or not: a quote, a backslash, a
// newline, UTF-8, an empty one, a space.
var textValues = []string{"a", `q"uote`, `back\slash`, "new\nline", "ünï€ode", "", "two words", "m/7B-Instruct"}

// Bucket layouts, each strictly ascending; the last ends with +Inf (not
// something the engines' parser yields, but expfmt writes no extra +Inf
// bucket then, which the cached text must follow).
var textLayouts = [][]float64{
	{1},
	{0.5, 1, 2.5},
	{0.001, 0.01, 0.1, 1, 10, 100},
	{-5, 0, 1e-300, 1e300},
	{1, 2, math.Inf(+1)},
}

func newTextWorld(next func() uint64) *textWorld {
	return &textWorld{next: next, descs: []textDesc{
		{d: prometheus.NewDesc("llm_g", "a gauge with \\ and \n in its help", []string{"model", "x"}, nil), typ: prometheus.GaugeValue, n: 2},
		{d: prometheus.NewDesc("llm_c_total", "a counter", []string{"model"}, prometheus.Labels{"node": "n1"}), typ: prometheus.CounterValue, n: 1},
		{d: prometheus.NewDesc("llm_u", "untyped", []string{"model"}, nil), typ: prometheus.UntypedValue, n: 1},
		{d: prometheus.NewDesc("llm_solo", "no labels", nil, nil), typ: prometheus.GaugeValue},
		{d: prometheus.NewDesc("llm_h_seconds", "a histogram", []string{"model"}, nil), hist: true, n: 1},
		{d: prometheus.NewDesc("llm_h2", "another histogram", []string{"model", "x"}, prometheus.Labels{"k": `v"1`}), hist: true, n: 2},
	}}
}

// value draws a float, often one whose spelling expfmt special-cases.
func (w *textWorld) value() float64 {
	r := w.next()
	switch r % 16 {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(+1)
	case 2:
		return math.Inf(-1)
	case 3:
		return math.Copysign(0, -1)
	case 4:
		return 0
	case 5:
		return 1
	case 6:
		return -1
	case 7:
		return math.MaxFloat64
	case 8:
		return math.SmallestNonzeroFloat64
	case 9:
		return 1<<53 + 2 // an integer beyond 2^53
	case 10:
		return float64(uint64(1)<<63 + 1<<40)
	case 11:
		return float64(r >> 44) // a small integer
	case 12:
		return -float64(r>>20) / 1000
	default:
		return math.Float64frombits(w.next()) // any bits: NaN payloads, subnormals
	}
}

// emit sends the series present this round: each label set of each
// descriptor is present with probability 3/4.
func (w *textWorld) emit(plan []uint64) func(collector.Sink) {
	return func(s collector.Sink) {
		p := 0
		take := func() uint64 { p++; return plan[p-1] }
		for _, d := range w.descs {
			sets := 1
			if d.n > 0 {
				sets = 4
			}
			for i := range sets {
				r := take()
				if r%4 == 0 {
					if d.hist {
						p += 8
					} else {
						p++
					}
					continue
				}
				var lv collector.LabelValues
				if d.n > 0 {
					lv = collector.Labels(textValues[(i*2+int(r>>8)%2)%len(textValues)])
					if d.n == 2 {
						lv.V[1], lv.N = textValues[(i+int(r>>16)%3)%len(textValues)], 2
					}
				}
				if !d.hist {
					s.Sample(d.d, d.typ, math.Float64frombits(take()), lv)
					continue
				}
				bounds := textLayouts[int(r>>24)%len(textLayouts)]
				h := &snapshot.Histogram{Bounds: bounds, Cumulative: make([]float64, len(bounds))}
				for j := range h.Cumulative {
					h.Cumulative[j] = math.Float64frombits(plan[p+j])
				}
				h.Count, h.Sum = math.Float64frombits(plan[p+6]), math.Float64frombits(plan[p+7])
				p += 8
				s.Histogram(d.d, h, lv)
			}
		}
	}
}

// plan draws one round: the same plan emits the same series with the
// same values, so the cache and the registry see one state.
func (w *textWorld) plan() []uint64 {
	var plan []uint64
	for _, d := range w.descs {
		sets := 1
		if d.n > 0 {
			sets = 4
		}
		for range sets {
			plan = append(plan, w.next())
			if !d.hist {
				plan = append(plan, math.Float64bits(w.value()))
				continue
			}
			for range 6 + 2 { // the longest layout, count and sum
				plan = append(plan, math.Float64bits(w.value()))
			}
		}
	}
	return plan
}

// checkTextRound renders one state through the series cache's text and
// requires it byte for byte equal to expfmt's encoding of the families the
// registry gathers from the same series as const metrics, and to expfmt's
// encoding of the cache's own families.
func checkTextRound(t *testing.T, c *SeriesCache, emit func(collector.Sink)) string {
	t.Helper()
	var cached, direct string
	c.GatherText(emit, func(mfs []*dto.MetricFamily, text func(*bytes.Buffer, int) error, err error) {
		if err != nil {
			t.Fatalf("cache: %v", err)
		}
		var b bytes.Buffer
		for i := range mfs {
			if err := text(&b, i); err != nil {
				t.Fatalf("text of %s: %v", mfs[i].GetName(), err)
			}
		}
		cached, direct = b.String(), testbody.Text(t, mfs)
	})
	// Every family here can be kept as text: one that fell back to
	// expfmt would hide a wrong spelling or order of the values.
	for name, f := range c.fams {
		if f.direct {
			t.Fatalf("family %s fell back to expfmt", name)
		}
	}
	checkKeptOnce(t, c)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(emitCollector(emit))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("registry: %v", err)
	}
	ref := testbody.Text(t, mfs)
	if cached != ref {
		t.Fatalf("cached text differs from the registry's: %s", testbody.FirstDiff(cached, ref))
	}
	if cached != direct {
		t.Fatalf("cached text differs from expfmt's of the same families: %s", testbody.FirstDiff(cached, direct))
	}
	return cached
}

// checkKeptOnce requires what the cache keeps to be kept once: each
// series' kept lines are its part of its family's text (not a copy of
// it), and each of its label pairs is the one the cache shares for that
// name and value.
func checkKeptOnce(t *testing.T, c *SeriesCache) {
	t.Helper()
	for name, f := range c.fams {
		if !f.joined {
			continue
		}
		hi := 0
		for _, s := range f.members {
			if len(s.text) == 0 {
				continue
			}
			at := int(uintptr(unsafe.Pointer(unsafe.SliceData(s.text))) - uintptr(unsafe.Pointer(unsafe.SliceData(f.text))))
			if at < 0 || at+len(s.text) > len(f.text) || at < hi || string(f.text[at:at+len(s.text)]) != string(s.text) {
				t.Fatalf("family %s: a series' kept lines %q are not its part of the family's text", name, s.text)
			}
			if cap(s.text) != len(s.text) {
				t.Fatalf("family %s: a series' kept lines can grow into its neighbour's", name)
			}
			hi = at + len(s.text)
		}
	}
	for k, s := range c.series {
		for _, lp := range s.m.Label {
			if c.pairs[pairKey{lp.GetName(), lp.GetValue()}] != lp {
				t.Fatalf("series %v: label pair %s=%q is not the shared one", k.lv.Slice(), lp.GetName(), lp.GetValue())
			}
		}
	}
	if len(c.pairs) > 2*c.pairsKept+minPairs {
		t.Fatalf("%d label pairs kept, more than twice the %d of the last pruning and %d", len(c.pairs), c.pairsKept, minPairs)
	}
}

type emitCollector func(collector.Sink)

func (emitCollector) Describe(chan<- *prometheus.Desc) {}
func (e emitCollector) Collect(ch chan<- prometheus.Metric) {
	var s collector.ConstSink
	e(&s)
	for _, m := range s {
		ch <- m
	}
}

// The series cache's text is byte for byte what expfmt writes for what
// the registry gathers, over many states: random values (NaN, ±Inf, -0,
// the largest and smallest floats, integers beyond 2^53, any bit
// pattern), series coming and going, histogram layouts changing, label
// values and help that need escaping. Every third round repeats the
// previous state's series with new values only; then nothing is encoded
// again through expfmt.
func TestCachedTextMatchesExpfmt(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 99))
		w := newTextWorld(rng.Uint64)
		c := NewSeriesCache()
		var last []uint64
		sawInf, sawNaN, sawNegative := false, false, false
		for round := range 300 {
			plan := w.plan()
			steady := round%3 == 2 && last != nil
			if steady {
				// Same series, layouts and presence: keep every structural
				// draw of the last plan, new values for the rest.
				for i, r := range last {
					if isStructural(w, i) {
						plan[i] = r
					}
				}
			}
			before := c.textEncodes
			out := checkTextRound(t, c, w.emit(plan))
			if steady && c.textEncodes != before {
				t.Fatalf("seed %d round %d: only values changed, yet %d families were encoded again", seed, round, c.textEncodes-before)
			}
			sawInf = sawInf || strings.Contains(out, " +Inf\n")
			sawNaN = sawNaN || strings.Contains(out, " NaN\n")
			sawNegative = sawNegative || strings.Contains(out, "} -")
			last = plan
		}
		if !sawInf || !sawNaN || !sawNegative {
			t.Errorf("seed %d: the states did not cover +Inf (%v), NaN (%v), negative values (%v)", seed, sawInf, sawNaN, sawNegative)
		}
	}
}

// isStructural reports whether plan[i] decides presence, labels or layout
// (a descriptor's per-label-set draw) rather than a value.
func isStructural(w *textWorld, i int) bool {
	p := 0
	for _, d := range w.descs {
		sets := 1
		if d.n > 0 {
			sets = 4
		}
		for range sets {
			if i == p {
				return true
			}
			p++
			if d.hist {
				p += 8
			} else {
				p++
			}
			if i < p {
				return false
			}
		}
	}
	return false
}

// appendValue spells values as expfmt does, worked by hand from its
// writeFloat: -0 is "0", the shortest 'g' otherwise.
func TestAppendValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{math.Copysign(0, -1), "0"},
		{0, "0"},
		{1, "1"},
		{-1, "-1"},
		{math.NaN(), "NaN"},
		{math.Inf(+1), "+Inf"},
		{math.Inf(-1), "-Inf"},
		{1 << 53, "9.007199254740992e+15"},
		{1<<53 + 2, "9.007199254740994e+15"},
		{123456, "123456"},
		{1e21, "1e+21"},
		{0.1, "0.1"},
		{-2.5e-7, "-2.5e-07"},
		{math.SmallestNonzeroFloat64, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
	} {
		if got := string(appendValue(nil, c.v)); got != c.want {
			t.Errorf("appendValue(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// encodeLines keeps a series' lines up to the value, worked by hand from
// the text format, and refuses what it cannot keep (a timestamp).
func TestEncodeLines(t *testing.T) {
	var scratch bytes.Buffer
	ts := int64(1700000000000)
	v := 2.5
	mf := &dto.MetricFamily{Name: ptr("x"), Type: dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &v}, TimestampMs: &ts}}}
	if _, _, _, ok := encodeLines(&scratch, mf, nil); ok {
		t.Fatal("a sample with a timestamp was kept")
	}
	mf.Metric[0].TimestampMs = nil
	header, text, ends, ok := encodeLines(&scratch, mf, nil)
	if !ok || string(header) != "# TYPE x gauge\n" || string(text) != "x " || len(ends) != 1 || ends[0] != 2 {
		t.Errorf("gauge: ok %v header %q text %q ends %v", ok, header, text, ends)
	}
	// A histogram with one finite bucket: expfmt adds the +Inf bucket
	// (the sample count), then the sum and the count.
	h := &dto.MetricFamily{Name: ptr("h"), Help: ptr("help"), Type: dto.MetricType_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{
			Label:     []*dto.LabelPair{{Name: ptr("model"), Value: ptr("a")}},
			Histogram: &dto.Histogram{SampleCount: ptr(uint64(5)), SampleSum: ptr(2.5), Bucket: []*dto.Bucket{{UpperBound: ptr(1.0), CumulativeCount: ptr(uint64(3))}}},
		}}}
	header, text, ends, ok = encodeLines(&scratch, h, nil)
	wantText := `h_bucket{model="a",le="1"} h_bucket{model="a",le="+Inf"} h_sum{model="a"} h_count{model="a"} `
	if !ok || string(header) != "# HELP h help\n# TYPE h histogram\n" || string(text) != wantText || len(ends) != 4 || ends[0] != 27 || ends[3] != int32(len(wantText)) {
		t.Errorf("histogram: ok %v header %q text %q ends %v", ok, header, text, ends)
	}
}

// A model leaving and another coming cost the encoding of the new series
// alone, not of their families.
func TestNewSeriesAloneEncoded(t *testing.T) {
	c := NewSeriesCache()
	g := prometheus.NewDesc("g", "g", []string{"model"}, nil)
	h := prometheus.NewDesc("h", "h", []string{"model"}, nil)
	emit := func(models ...string) func(collector.Sink) {
		return func(s collector.Sink) {
			for i, m := range models {
				s.Sample(g, prometheus.GaugeValue, float64(i), collector.Labels(m))
				s.Histogram(h, &snapshot.Histogram{Bounds: []float64{1}, Cumulative: []float64{1}, Count: 2, Sum: 3}, collector.Labels(m))
			}
		}
	}
	checkTextRound(t, c, emit("a", "b", "c"))
	if c.textEncodes != 6 {
		t.Fatalf("first render encoded %d series, want 6 (3 models, 2 series each)", c.textEncodes)
	}
	out := checkTextRound(t, c, emit("a", "c", "d"))
	if c.textEncodes != 8 {
		t.Errorf("after b left and d came, %d series encoded in all, want 8 (d's two)", c.textEncodes)
	}
	if !strings.Contains(out, "g{model=\"d\"} 2\n") || strings.Contains(out, `model="b"`) {
		t.Errorf("render:\n%s", out)
	}
}

func ptr[T any](v T) *T { return &v }

// FuzzCachedText drives the series cache through states read from the
// input (8 bytes per draw, zeros once it runs out) and requires its text
// byte for byte equal to the registry's, as TestCachedTextMatchesExpfmt.
func FuzzCachedText(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff, 0, 0x7f, 0xf0, 1, 2, 3, 4, 5}, 40))
	seed := make([]byte, 8*400)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(seed); i += 8 {
		binary.LittleEndian.PutUint64(seed[i:], rng.Uint64())
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		next := func() uint64 {
			var b [8]byte
			n := copy(b[:], data)
			data = data[n:]
			return binary.LittleEndian.Uint64(b[:])
		}
		w := newTextWorld(next)
		c := NewSeriesCache()
		for range 6 {
			checkTextRound(t, c, w.emit(w.plan()))
			if len(data) == 0 {
				break
			}
		}
	})
}
