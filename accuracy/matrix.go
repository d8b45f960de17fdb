package accuracy

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// Matrix is the confusion matrix of the failure-mode classifier: every
// case, seed and format.
type Matrix struct {
	Options  FailModeOptions
	Cases    []Case
	Outcomes []Outcome
}

// RunMatrix runs every case for every seed, read in every format.
func RunMatrix(cases []Case, o FailModeOptions) (*Matrix, error) {
	m := &Matrix{Options: o, Cases: cases}
	for _, c := range cases {
		for _, seed := range o.Seeds {
			outs, err := RunFailMode(c, seed, o)
			if err != nil {
				return nil, fmt.Errorf("%s seed %d: %w", c.Name, seed, err)
			}
			m.Outcomes = append(m.Outcomes, outs...)
		}
	}
	return m, nil
}

// Failures lists the outcomes that broke the matrix's rules.
func (m *Matrix) Failures() []Outcome {
	var out []Outcome
	for _, o := range m.Outcomes {
		if !o.Pass(m.Options.Settings.Window) {
			out = append(out, o)
		}
	}
	return out
}

// WriteMarkdown writes the matrix per format: for each case the mode
// named (or none, or unsupported), in how many seeds, what else was
// raised, and the detection latency from onset (min..max over seeds).
func (m *Matrix) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	o := m.Options
	for _, f := range o.Formats {
		fmt.Fprintf(&b, "\n### %s format\n\n", f)
		fmt.Fprintf(&b, "Seeds %v; window %s, baseline %s, enter %d, leave %d; scrapes every %s; lever at %s after a healthy start, held %s; GPU read through the dcgm-exporter backend: %v.\n\n",
			o.Seeds, o.Settings.Window, o.Settings.Baseline, o.Settings.Enter, o.Settings.Leave, o.Interval, o.Onset, o.Duration, o.GPU)
		b.WriteString("| case | expected | named | latency from onset (min..max) | other modes raised | pass |\n|---|---|---|---|---|---|\n")
		for _, c := range m.Cases {
			var outs []Outcome
			for _, x := range m.Outcomes {
				if x.Format == f && x.Case.Name == c.Name {
					outs = append(outs, x)
				}
			}
			expect, named, latency, others, pass := "none", "", "", map[string]int{}, 0
			if c.Expect != nil {
				expect = c.Expect.String()
			}
			var lat []time.Duration
			nNamed, unsupported := 0, 0
			for _, x := range outs {
				if x.Pass(o.Settings.Window) {
					pass++
				}
				if !x.Supported {
					unsupported++
				}
				if x.NamedOK {
					nNamed++
					lat = append(lat, x.Named)
				}
				for mode := range x.Others {
					others[mode.String()]++
				}
			}
			switch {
			case unsupported == len(outs) && c.Expect != nil:
				named = "unsupported"
			case c.Expect == nil:
				named = "—"
			default:
				named = fmt.Sprintf("%d/%d", nNamed, len(outs))
			}
			if len(lat) > 0 {
				slices.Sort(lat)
				latency = fmt.Sprintf("%s..%s", lat[0], lat[len(lat)-1])
			}
			var os []string
			for _, k := range slices.Sorted(mapsKeys(others)) {
				os = append(os, fmt.Sprintf("%s (%d/%d)", k, others[k], len(outs)))
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d/%d |\n", c.Name, expect, named, latency, strings.Join(os, ", "), pass, len(outs))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mapsKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ModeOf is the mode a lever names.
func ModeOf(l sim.Lever) (diagnosis.Mode, bool) { return diagnosis.ParseMode(string(l)) }
