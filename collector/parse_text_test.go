package collector

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// running is a vLLM gauge line (llm_requests_running) of model m.
func running(m, v string) string {
	return `vllm:num_requests_running{model_name="` + m + `"} ` + v + "\n"
}

const (
	hTYPE = "# TYPE vllm:e2e_request_latency_seconds histogram\n"
	hLe1  = `vllm:e2e_request_latency_seconds_bucket{le="1",model_name="a"} 1` + "\n"
	hRest = `vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="a"} 2` + "\n" +
		`vllm:e2e_request_latency_seconds_sum{model_name="a"} 1.5` + "\n" +
		`vllm:e2e_request_latency_seconds_count{model_name="a"} 2` + "\n"
)

// fastPathCases are bodies read after a first one that taught the parser
// its series, each with what textparse makes of the second, worked out by
// hand from its grammar (model/textparse/promlex.l): the fast path must
// give the same. fast is how many lines of next the fast path reads.
var fastPathCases = []struct {
	name, first, next string
	model             string  // the model whose running gauge is checked
	running           float64 // want; NaN: the parse fails
	dupes             int
	fast              int
}{
	{"steady", running("a", "1"), running("a", "2"), "a", 2, 0, 1},
	{"garbage after a learnt prefix", running("a", "1"), running("a", "1 garbage"), "a", math.NaN(), 0, 0},
	{"value glued to garbage", running("a", "1"), running("a", "2x"), "a", math.NaN(), 0, 0},
	{"a brace after the value", running("a", "1"), running("a", "2{"), "a", math.NaN(), 0, 0},
	// The series is everything up to the last '}', quotes and all.
	{"spaces, braces and escaped quotes in a label value", running(`a} b \"c\" {d}`, "3"), running(`a} b \"c\" {d}`, "4"), `a} b "c" {d}`, 4, 0, 1},
	{"a timestamp", running("a", "1"), running("a", "5 1700000000000"), "a", 5, 0, 1},
	{"a timestamp past int64", running("a", "1"), running("a", "5 99999999999999999999"), "a", math.NaN(), 0, 0},
	{"a negative timestamp", running("a", "1"), running("a", "5 -1"), "a", math.NaN(), 0, 0},
	{"two timestamps", running("a", "1"), running("a", "5 1 2"), "a", math.NaN(), 0, 0},
	{"trailing blanks", running("a", "1"), running("a", "6 \t "), "a", 6, 0, 1},
	{"blanks before the value", running("a", "1"), running("a", " \t 6"), "a", 6, 0, 1},
	{"CRLF", running("a", "1"), strings.TrimSuffix(running("a", "7"), "\n") + "\r\n", "a", math.NaN(), 0, 0},
	{"hexadecimal float (textparse refuses p)", running("a", "1"), running("a", "0x1p3"), "a", math.NaN(), 0, 0},
	{"underscore in a number", running("a", "1"), running("a", "1_000"), "a", math.NaN(), 0, 0},
	{"exponent and sign", running("a", "1"), running("a", "+1.5e3"), "a", 1500, 0, 1},
	{"negative gauge", running("a", "1"), running("a", "-1"), "a", -1, 0, 1},
	{"out of float64's range", running("a", "1"), running("a", "1e999"), "a", math.NaN(), 0, 0},
	{"no newline at the end", running("a", "1"), strings.TrimSuffix(running("a", "3"), "\n"), "a", 3, 0, 0},
	// textparse keeps leading blanks in the series, and in its name: no
	// family of the table has that name, so the line is ignored.
	{"leading blanks", running("a", "1"), "  " + running("a", "4"), "a", 0, 0, 0},
	{"blank lines", running("a", "1"), "\n \t\n\n" + running("a", "5") + "\n", "a", 5, 0, 1},
	{"a NUL at the start of a line ends the body", running("a", "1") + running("b", "1"), running("a", "2") + "\x00" + running("b", "2"), "b", 0, 0, 1},
	{"a label value across two lines", running("a\nb", "1"), running("a\nb", "2"), "a\nb", 2, 0, 0},
	{"a series that comes and goes", running("a", "1") + running("b", "1"), running("b", "3"), "b", 3, 0, 1},
	{"lines in another order", running("a", "1") + running("b", "1"), running("b", "3") + running("a", "4"), "a", 4, 0, 2},
	{"a new series between learnt ones", running("a", "1") + running("b", "1"), running("a", "1") + running("c", "5") + running("b", "1"), "c", 5, 0, 2},
	{"a comment line learnt, then changed", "# HELP vllm:num_requests_running x\n" + running("a", "1"), "# HELP vllm:num_requests_running \xff\n" + running("a", "1"), "a", math.NaN(), 0, 0},
	{"the TYPE changes", "# TYPE vllm:num_requests_running gauge\n" + running("a", "1"), "# TYPE vllm:num_requests_running counter\n" + running("a", "2"), "a", 2, 0, 1},
	{"duplicate with reordered labels", running("a", "1") + `vllm:num_requests_running{engine="0",model_name="a"} 1` + "\n" + `vllm:num_requests_running{model_name="a",engine="0"} 9` + "\n",
		running("a", "1") + `vllm:num_requests_running{engine="0",model_name="a"} 2` + "\n" + `vllm:num_requests_running{model_name="a",engine="0"} 9` + "\n", "a", 3, 1, 3},
	// Under TYPE histogram textparse writes le="1e0" as le="1.0", the
	// same series as le="1" (a duplicate); under another TYPE it does
	// not, and the two samples are two ranks of one bucket. The new line
	// comes after fast lines: the fast path must give textparse the TYPE.
	{"a new bucket spelling under TYPE histogram", hTYPE + hLe1 + hRest + running("a", "1"),
		hTYPE + hLe1 + `vllm:e2e_request_latency_seconds_bucket{le="1e0",model_name="a"} 1` + "\n" + hRest + running("a", "1"), "a", 1, 1, 6},
	{"the same under TYPE gauge", hTYPE + hLe1 + hRest + running("a", "1"),
		strings.Replace(hTYPE, "histogram", "gauge", 1) + hLe1 + `vllm:e2e_request_latency_seconds_bucket{le="1e0",model_name="a"} 1` + "\n" + hRest + running("a", "1"), "a", 1, 0, 5},
}

// TestFastPathHostileLines reads each case's second body after its first
// with the fast path and with textparse alone, and checks both against
// the value worked out by hand.
func TestFastPathHostileLines(t *testing.T) {
	for _, c := range fastPathCases {
		t.Run(c.name, func(t *testing.T) {
			fast, _ := NewParser(snapshot.VLLM, ParseOptions{})
			slow, _ := NewParser(snapshot.VLLM, ParseOptions{})
			slow.slowOnly = true
			// first, next, then both again: the second round reads
			// through what the first (failed or not) left behind.
			var got string
			var snap *snapshot.Snapshot
			for i, body := range []string{c.first, c.next, c.first, c.next} {
				s, err := fast.Parse([]byte(body), "", time.Unix(1, 0))
				got, snap = describeResult(s, err), s
				s, err = slow.Parse([]byte(body), "", time.Unix(1, 0))
				if want := describeResult(s, err); got != want {
					t.Fatalf("parse %d: fast path:\n%s\ntextparse:\n%s", i, got, want)
				}
				if i == 1 && fast.fastHits != c.fast {
					t.Errorf("the fast path read %d lines of next, want %d", fast.fastHits, c.fast)
				}
			}
			if math.IsNaN(c.running) {
				if snap != nil {
					t.Fatalf("parsed, want an error:\n%s", got)
				}
				return
			}
			if snap == nil {
				t.Fatalf("want a snapshot: %s", got)
			}
			m := snap.Model(c.model)
			switch {
			case c.running == 0 && m != nil:
				t.Errorf("model %q present, want it absent", c.model)
			case c.running != 0 && (m == nil || !m.Gauges[snapshot.Running].OK || m.Gauges[snapshot.Running].V != c.running):
				t.Errorf("model %q running %+v, want %v\n%s", c.model, m, c.running, got)
			}
			if snap.Duplicates != c.dupes {
				t.Errorf("%d duplicates, want %d", snap.Duplicates, c.dupes)
			}
		})
	}
}

// A steady body is read by the fast path alone, and gives what textparse
// gives; a later body (every counter grown) too.
func TestFastPathReadsASteadyBody(t *testing.T) {
	src := mustRead(t, "testdata/fixtures/vllm/v1-latest-from-source.prom")
	body := testbody.Multiply(src, fixtureModel, 3)
	later := testbody.Advance(body, 0.5)
	fast, _ := NewParser(snapshot.VLLM, ParseOptions{})
	slow, _ := NewParser(snapshot.VLLM, ParseOptions{})
	slow.slowOnly = true
	lines := bytes.Count(body, []byte("\n"))
	// On the first parse, only a line that repeats an earlier one of the
	// body is known (Multiply copies the lines without a model label).
	repeats, seen := 0, map[string]bool{}
	for _, l := range strings.SplitAfter(string(body), "\n") {
		if seen[l] {
			repeats++
		}
		seen[l] = true
	}
	for i, b := range [][]byte{body, body, later} {
		s, err := fast.Parse(b, "", time.Unix(int64(i), 0))
		got := describeResult(s, err)
		s, err = slow.Parse(b, "", time.Unix(int64(i), 0))
		if want := describeResult(s, err); got != want {
			t.Fatalf("parse %d differs:\nfast:\n%s\ntextparse:\n%s", i, got, want)
		}
		switch {
		case i == 0 && fast.fastHits != repeats:
			t.Errorf("first parse: %d lines read by the fast path, want %d (the repeated ones)", fast.fastHits, repeats)
		case i > 0 && fast.fastHits != lines:
			t.Errorf("parse %d: %d of %d lines read by the fast path", i, fast.fastHits, lines)
		}
	}
}

// OpenMetrics never takes the fast path; a target that switches format
// gives what a parser that only ever saw the new format gives.
func TestFastPathFormatSwitch(t *testing.T) {
	src := mustRead(t, "testdata/fixtures/vllm/v1-latest-from-source.prom")
	om := textToOpenMetrics(src)
	if om == nil {
		t.Fatal("no OpenMetrics form")
	}
	p, _ := NewParser(snapshot.VLLM, ParseOptions{})
	for i, step := range []struct {
		body []byte
		ct   string
	}{{src, ctText}, {src, ctText}, {om, ctOpenMetrics}, {om, ctOpenMetrics}, {src, ctText}, {src, ctText}} {
		s, err := p.Parse(step.body, step.ct, time.Unix(1, 0))
		got := describeResult(s, err)
		fresh, _ := NewParser(snapshot.VLLM, ParseOptions{})
		s, err = fresh.Parse(step.body, step.ct, time.Unix(1, 0))
		if want := describeResult(s, err); got != want {
			t.Fatalf("step %d differs from a fresh parser:\n%s\n%s", i, got, want)
		}
		if step.ct == ctOpenMetrics && p.fastHits != 0 {
			t.Errorf("step %d: OpenMetrics read by the fast path (%d lines)", i, p.fastHits)
		}
		if i == 5 && p.fastHits == 0 {
			t.Errorf("step %d: the second text body after the switch not read by the fast path", i)
		}
	}
}
