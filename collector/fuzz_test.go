package collector

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

const (
	ctText        = "text/plain; version=0.0.4; charset=utf-8"
	ctOpenMetrics = "application/openmetrics-text; version=1.0.0; charset=utf-8"
)

var fuzzEngines = snapshot.Engines

// FuzzParse feeds the engine parser arbitrary bodies, as the classic text
// format and as OpenMetrics, for each engine. Seeds: every capture under
// testdata/fixtures, in both formats, each followed by a later capture of
// the same engine (testbody.Advance) and by itself with its values cut
// short. Whatever the bodies, the parser must not panic, must keep at most
// model_limit models, and must give the same snapshot when the same body
// comes again (the second parse goes through its series cache, the first
// does not).
//
// It is also a differential test of the text fast path: a parser with it
// and one that reads every line with textparse (slowOnly) are given the
// same bodies in the same order (body, next, body, next) and must give the
// same snapshots and the same errors, word for word. The second body is
// where the fast path runs: lines learnt from the first, followed by
// whatever the fuzzer puts after them.
func FuzzParse(f *testing.F) {
	for _, body := range testbody.Files(f, "testdata/fixtures/*/*.prom") {
		later := testbody.Advance(body, 0.25)
		for e := range fuzzEngines {
			f.Add(body, later, false, uint8(e))
		}
		f.Add(body, bytes.ReplaceAll(body, []byte(".0\n"), []byte(" garbage\n")), false, uint8(0))
		if om := textToOpenMetrics(body); om != nil {
			f.Add(om, textToOpenMetrics(later), true, uint8(0))
		}
	}
	for _, c := range fastPathCases {
		f.Add([]byte(c.first), []byte(c.next), false, uint8(0))
	}
	f.Add([]byte("vllm:num_requests_running{model_name=\"a\"} 1\n# EOF\n"), []byte(nil), true, uint8(0))
	f.Add([]byte{0xff, 0xfe, 0, '\n'}, []byte{'\n'}, false, uint8(1))
	f.Fuzz(func(t *testing.T, body, next []byte, openMetrics bool, engine uint8) {
		e := fuzzEngines[int(engine)%len(fuzzEngines)]
		ct := ctText
		if openMetrics {
			ct = ctOpenMetrics
		}
		const limit = 4
		p, err := NewParser(e, ParseOptions{DefaultModel: "unknown", ModelLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		slow, _ := NewParser(e, ParseOptions{DefaultModel: "unknown", ModelLimit: limit})
		slow.slowOnly = true
		now := time.Unix(1_700_000_000, 0)
		var first *snapshot.Snapshot
		for i, b := range [][]byte{body, next, body, next} {
			got, err := p.Parse(b, ct, now)
			want, werr := slow.Parse(b, ct, now)
			if g, w := describeResult(got, err), describeResult(want, werr); g != w {
				t.Fatalf("parse %d: fast path and textparse differ:\nfast:\n%s\ntextparse:\n%s", i, g, w)
			}
			if i == 0 {
				first = got
			}
			if i == 2 && (first == nil) != (got == nil) {
				t.Fatalf("the same body parsed once with err=%v, then with err=%v", first == nil, err)
			}
			if i == 2 && first != nil {
				if a, b := describeModels(first.Models), describeModels(got.Models); a != b {
					t.Fatalf("the same body parsed twice differs:\n%s\n%s", a, b)
				}
			}
			if got == nil {
				continue
			}
			if len(got.Models) > limit {
				t.Fatalf("%d models, limit %d", len(got.Models), limit)
			}
			for _, m := range got.Models {
				for i, h := range m.Hists {
					if h == nil {
						continue
					}
					if len(h.Cumulative) != len(h.Bounds) {
						t.Fatalf("model %q histogram %d: %d bounds, %d counts", m.Name, i, len(h.Bounds), len(h.Cumulative))
					}
					for j := 1; j < len(h.Bounds); j++ {
						if !(h.Bounds[j] > h.Bounds[j-1]) {
							t.Fatalf("model %q histogram %d: bounds not strictly ascending: %v", m.Name, i, h.Bounds)
						}
					}
				}
			}
		}
	})
}

// describeResult prints a parse's outcome: its error, or its snapshot
// (models, errors sorted, duplicates, process start).
func describeResult(s *snapshot.Snapshot, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	errs := make([]string, 0, len(s.Errors))
	for _, e := range s.Errors {
		errs = append(errs, e.Error())
	}
	slices.Sort(errs)
	return fmt.Sprintf("%sprocess start %v, duplicates %d %q\nerrors %q\n", describeModels(s.Models), s.ProcessStart, s.Duplicates, s.DuplicateSeries, errs)
}

// describeModels prints models with their histograms' contents (not their
// pointers) and finish reasons in order.
func describeModels(ms []snapshot.Model) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%q %v %v %v\n", m.Name, m.Gauges, m.Counters, m.HistSource)
		for _, r := range slices.Sorted(maps.Keys(m.Finished)) {
			fmt.Fprintf(&b, "  finished %q %v\n", r, m.Finished[r])
		}
		for i, h := range m.Hists {
			if h != nil {
				fmt.Fprintf(&b, "  hist %d %v %v %v %v\n", i, h.Bounds, h.Cumulative, h.Count, h.Sum)
			}
		}
	}
	return b.String()
}

// textToOpenMetrics re-encodes a text-format body as OpenMetrics 1.0, or
// returns nil when expfmt cannot read it.
func textToOpenMetrics(text []byte) []byte {
	parser := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range mfs {
		if enc.Encode(mf) != nil {
			return nil
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		c.Close()
	}
	return buf.Bytes()
}
