package accuracy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/collector/gpu"
	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Knee is the simulator's default knee in requests per second: where the
// healthy engine's batch reaches max_num_seqs and the queue starts to
// form (docs/accuracy.md, the sweep).
const SimKnee = 16.0

// Case is one row of the confusion matrix: a traffic level or a lever
// switched on after a healthy start.
type Case struct {
	Name string
	// Lever is switched on at Onset; Healthy runs healthy throughout.
	Lever sim.Lever
	// Rate, when set, is the offered chat load in requests per second
	// (healthy cases); else the default workload's.
	Rate float64
	// Expect is the mode that must be named; nil for none.
	Expect *diagnosis.Mode
}

// FailModeCases are the rows the issue asks for: healthy at half the
// knee and at the knee (nothing raised, ever), healthy past it
// (queue_growth only) and each lever from a healthy start.
func FailModeCases() []Case {
	mode := func(m diagnosis.Mode) *diagnosis.Mode { return &m }
	cases := []Case{
		{Name: "healthy 0.5x knee", Lever: sim.Healthy, Rate: 0.5 * SimKnee},
		{Name: "healthy 1x knee", Lever: sim.Healthy, Rate: SimKnee},
		{Name: "healthy 1.25x knee", Lever: sim.Healthy, Rate: 1.25 * SimKnee, Expect: mode(diagnosis.QueueGrowth)},
	}
	for _, l := range sim.Levers[1:] {
		m, ok := diagnosis.ParseMode(string(l))
		if !ok {
			panic("lever without a mode: " + l)
		}
		cases = append(cases, Case{Name: string(l), Lever: l, Expect: mode(m)})
	}
	return cases
}

// FailModeOptions describe one run of the matrix.
type FailModeOptions struct {
	// Formats the engine is read in, each by its own adapter.
	Formats  []sim.Format
	Seeds    []uint64
	Settings diagnosis.Settings
	// Interval is the scrape interval on the virtual clock.
	Interval time.Duration
	// Onset is when the lever switches on (after a healthy warm-up that
	// gives the baseline); Duration how long it runs after.
	Onset, Duration time.Duration
	// GPU reads the simulated GPU through the dcgm-exporter backend; off,
	// gpu_throttling must be unsupported.
	GPU bool
	// SLOs give decode_saturation its objectives (the built-in chat SLO).
	SLOs []goodput.SLO
	// Noise is what real scraping adds: missed scrapes and jittered
	// intervals (none by default).
	Noise ScrapeNoise
}

// DefaultFailModeOptions: 5 s scrapes, the default diagnosis settings,
// 3 minutes healthy, 3 minutes of lever.
func DefaultFailModeOptions() FailModeOptions {
	return FailModeOptions{
		Formats: sim.Formats, Seeds: []uint64{1, 2, 3}, Settings: diagnosis.DefaultSettings(),
		Interval: 5 * time.Second, Onset: 3 * time.Minute, Duration: 3 * time.Minute, GPU: true,
		SLOs: []goodput.SLO{ChatSLO()},
	}
}

// ChatSLO is the built-in chat SLO of simulate and demo: TTFT 500 ms for
// 99 %, TPOT 50 ms for 95 %, errors under 1 %.
func ChatSLO() goodput.SLO {
	return goodput.SLO{Name: "chat", Objectives: []goodput.Objective{
		{Kind: goodput.KindTTFT, Threshold: 0.5, Target: 0.99},
		{Kind: goodput.KindTPOT, Threshold: 0.05, Target: 0.95},
		{Kind: goodput.KindError, Target: 0.99},
	}}
}

// Outcome is one case, seed and format.
type Outcome struct {
	Case   Case
	Seed   uint64
	Format sim.Format
	// Supported is false when the expected mode is unsupported on this
	// format (every judgement said so).
	Supported bool
	// Named is when the expected mode was first raised, relative to the
	// onset (for healthy cases, to the start); NamedOK false if never.
	Named   time.Duration
	NamedOK bool
	// Others are the modes raised that were not expected, with when
	// each was first raised.
	Others map[diagnosis.Mode]time.Duration
	// Trace is one line per minute of signals, for reading a failure.
	Trace []string
}

// Pass applies the matrix's rules: the expected mode named within two
// windows of onset and nothing else ever raised; healthy traffic raises
// nothing. Where the format cannot support the expected mode, it must
// say unsupported; what it raised instead (a queue it can see) is
// recorded in Others but is no failure.
func (o Outcome) Pass(window time.Duration) bool {
	switch {
	case o.Case.Expect == nil:
		return len(o.Others) == 0
	case !o.Supported:
		return true
	}
	return len(o.Others) == 0 && o.NamedOK && o.Named <= 2*window
}

// RunFailMode runs one case for one seed: one simulated engine, read in
// every format of o.Formats by its own parser and classifier each cycle
// (the formats see the same traffic), one outcome per format.
func RunFailMode(c Case, seed uint64, o FailModeOptions) ([]Outcome, error) {
	cfg := sim.DefaultConfig()
	cfg.Seed = seed
	cfg.Truth.Horizon = time.Minute
	if c.Rate > 0 {
		total := 0.0
		for _, cl := range cfg.Workload.Classes {
			total += cl.Rate
		}
		for i := range cfg.Workload.Classes {
			cfg.Workload.Classes[i].Rate *= c.Rate / total
		}
	}
	onset := o.Onset
	if c.Lever == sim.Healthy {
		onset = 0
	}
	cfg.Scenario = sim.Scenario{Phases: []sim.Phase{{Lever: sim.Healthy, Duration: o.Onset}, {Lever: c.Lever}}}
	e, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	var backend *gpu.DCGMExporter
	if o.GPU {
		backend, err = gpu.NewDCGMExporter(gpu.DCGMExporterOptions{URL: "http://sim-gpu/metrics", Transport: simGPU{e}})
		if err != nil {
			return nil, err
		}
	}
	type reader struct {
		format        sim.Format
		parser        *collector.Parser
		diag          *diagnosis.Diagnoser
		out           Outcome
		supportedSeen bool
	}
	var readers []*reader
	for _, f := range o.Formats {
		engine := snapshot.Engine(f) // every format is named after its engine
		parser, err := collector.NewParser(engine, collector.ParseOptions{ModelLimit: 100, DefaultModel: "sim"})
		if err != nil {
			return nil, err
		}
		d := diagnosis.New(o.Settings)
		d.SetObjectives(diagnosis.ObjectivesFor("sim", o.SLOs, o.Settings.Thresholds))
		readers = append(readers, &reader{format: f, parser: parser, diag: d,
			out: Outcome{Case: c, Seed: seed, Format: f, Others: map[diagnosis.Mode]time.Duration{}}})
	}
	start := time.Unix(int64(cfg.StartUnix), 0)
	end := o.Onset + o.Duration
	var buf bytes.Buffer
	for at := o.Interval; at <= end; at += o.Interval {
		e.AdvanceTo(at)
		now := start.Add(at)
		var devs []gpu.Device
		if backend != nil {
			if devs, err = backend.Collect(context.Background()); err != nil {
				return nil, err
			}
		}
		for _, r := range readers {
			buf.Reset()
			if err := e.WriteMetrics(&buf, r.format); err != nil {
				return nil, err
			}
			snap, err := r.parser.Parse(buf.Bytes(), "", now)
			if err != nil {
				return nil, fmt.Errorf("the %s adapter rejected the simulator's exposition: %w", r.format, err)
			}
			snap.Target = "sim"
			v := r.diag.Observe(now, snap, devs, backend != nil)
			out := &r.out
			if c.Expect != nil && v.Ready && v.Modes[*c.Expect].Supported {
				r.supportedSeen = true
			}
			if (at-onset)%time.Minute == 0 && v.Ready {
				out.Trace = append(out.Trace, traceLine(at, &v))
			}
			for _, m := range v.Raised() {
				rel := at - onset
				if c.Expect != nil && m == *c.Expect {
					if !out.NamedOK {
						out.Named, out.NamedOK = rel, true
					}
					continue
				}
				if _, seen := out.Others[m]; !seen {
					out.Others[m] = rel
					out.Trace = append(out.Trace, fmt.Sprintf("%v: %s raised: %s", at, m, v.Modes[m].Evidence))
				}
			}
		}
	}
	outs := make([]Outcome, len(readers))
	for i, r := range readers {
		r.out.Supported = c.Expect == nil || r.supportedSeen
		outs[i] = r.out
	}
	return outs, nil
}

func traceLine(at time.Duration, v *diagnosis.Verdict) string {
	w, b := &v.Window, &v.Baseline
	return fmt.Sprintf("%4.0fs run %5.1f/%3.0f wait %6.1f slope %+6.2f kv %.2f (per run %.4f, b %.4f) pre %.2f ttftA %.3f decA %.3f itl %5.1fms (b %5.1f) ppr %5.0f (b %5.0f) hit %.3f (b %.3f) gen %5.0f clk %.2f thr %.2f err %.3f abort %.3f up %.2f raised %v",
		at.Seconds(), w.Running.V, w.RunningCeiling.V, w.Waiting.V, w.WaitingSlope.V, w.KVUsage.V, w.KVPerRunning.V, b.KVPerRunning.V, w.PreemptionsPerSecond.V,
		w.TTFTAttainment.V, w.DecodeAttainment.V, 1000*w.DecodeMean.V, 1000*b.DecodeMean.V, w.PromptTokensPerRequest.V, b.PromptTokensPerRequest.V,
		w.PrefixHitRatio.V, b.PrefixHitRatio.V, w.GenerationTokensPerSecond.V, w.GPUClockRatio.V, w.GPUThrottledShare.V, w.ErrorRatio.V, w.AbortRatio.V, w.UpShare.V, v.Raised())
}

// simGPU serves the simulated GPU's dcgm-exporter exposition to the
// daemon's dcgm-exporter backend without a socket.
type simGPU struct{ e *sim.Engine }

func (s simGPU) RoundTrip(r *http.Request) (*http.Response, error) {
	var buf bytes.Buffer
	if err := s.e.WriteGPUMetrics(&buf); err != nil {
		return nil, err
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": []string{sim.ContentType}},
		Body: io.NopCloser(&buf), ContentLength: int64(buf.Len()), Request: r}, nil
}
