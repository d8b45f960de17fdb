package accuracy

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

var (
	updateDocs = flag.Bool("update", false, "rewrite the failure-mode record and the section of docs/accuracy.md from a full evaluation (-failmode.full)")
	seedsFlag  = flag.Int("failmode.seeds", 0, "run the failure-mode tests on N seeds from -failmode.seed-base")
)

const (
	docPath   = "../docs/accuracy.md"
	beginMark = "<!-- failure-modes:begin (make accuracy) -->"
	endMark   = "<!-- failure-modes:end -->"
)

// TestFailModeMatrix drives the simulator on its virtual clock through
// the daemon's collection and classification path (the engine's own
// exposition, the real adapters, the dcgm-exporter backend, the
// Diagnoser) for every case of FailModeCases, three seeds, every format.
func TestFailModeMatrix(t *testing.T) {
	o := DefaultFailModeOptions()
	o.Formats = flagFormats(t, o.Formats)
	if *seedsFlag > 0 || *seedBaseFlag > 0 {
		o.Seeds = flagSeeds(o.Seeds)
	} else if raceEnabled {
		// Under the race detector (CI) the simulator runs about ten
		// times slower and shares two cores with the other packages'
		// tests: one seed per case, 2 minutes of healthy start (the
		// baseline needs half a window) and 2 minutes of lever (the
		// two windows it has to be named in). The three seeds and the
		// longer runs go without -race and into the doc.
		o.Seeds = o.Seeds[:1]
		o.Onset, o.Duration = 2*time.Minute, 2*time.Minute
	}
	var cases []Case
	for _, c := range FailModeCases() {
		if *leversFlag == "" || strings.Contains(","+*leversFlag+",", ","+string(c.Lever)+",") {
			cases = append(cases, c)
		}
	}
	m, err := RunMatrix(cases, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Failures() {
		t.Errorf("%s / %s / seed %d: named=%v after %s (supported %v), others %v\n  %s",
			o.Format, o.Case.Name, o.Seed, o.NamedOK, o.Named, o.Supported, o.Others, strings.Join(o.Trace, "\n  "))
	}
	// Where the support matrix lacks a mode, it must be unsupported:
	// llama.cpp has no preemption counter, no KV gauge in its current
	// builds and no latency histograms (its prefix-cache counter,
	// prompt_tokens_cached_total, makes prefix_cache_collapse supported).
	for _, o := range m.Outcomes {
		if o.Format != sim.FormatLlamaCPP || o.Case.Expect == nil {
			continue
		}
		switch o.Case.Expect.String() {
		case "kv_preemption", "prefill_interference", "kv_monopoly", "decode_saturation":
			if o.Supported {
				t.Errorf("llamacpp %s: supported, want unsupported", o.Case.Name)
			}
		default:
			if !o.Supported {
				t.Errorf("llamacpp %s: unsupported, want supported", o.Case.Name)
			}
		}
	}
	if testing.Verbose() {
		var b bytes.Buffer
		if err := m.WriteMarkdown(&b); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + b.String())
	}
}

// TestFailModeNoGPU: without GPU series gpu_throttling is unsupported,
// never guessed, and the lever raises nothing else it cannot explain.
func TestFailModeNoGPU(t *testing.T) {
	o := DefaultFailModeOptions()
	o.GPU = false
	o.Formats = []sim.Format{sim.FormatVLLM}
	o.Onset, o.Duration = 2*time.Minute, 2*time.Minute
	for _, c := range FailModeCases() {
		if c.Lever != sim.GPUThrottling {
			continue
		}
		outs, err := RunFailMode(c, 1, o)
		if err != nil {
			t.Fatal(err)
		}
		if out := outs[0]; out.Supported || out.NamedOK {
			t.Errorf("gpu_throttling without GPU series: supported %v named %v, want unsupported", out.Supported, out.NamedOK)
		}
	}
}

func writeSection(t *testing.T, body string) {
	t.Helper()
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", docPath, beginMark, endMark)
	}
	s = s[:i+len(beginMark)] + "\n" + body + "\n" + s[j:]
	if err := os.WriteFile(docPath, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}
