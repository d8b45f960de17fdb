package capacity

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// ReportOptions say what Report judges and how.
type ReportOptions struct {
	Files    []string    // the sweep's result files
	Baseline []string    // a baseline sweep's files; none: no gate
	SLO      goodput.SLO // the SLO each round is judged against
	Peak     float64     // goodput needed at peak, tok/s, for the replica count (0: none)
	Hourly   float64     // one replica's price per hour (0: no cost)
	Currency string
	MaxDrop  float64 // largest allowed fall of the knee's goodput against Baseline, as a ratio
	// HTML, when set, receives the self-contained HTML page of the
	// judged sweeps (WriteHTML).
	HTML io.Writer
}

// ErrRegressed is Report's error when the gate trips; its reasons were
// written already.
var ErrRegressed = errors.New("capacity regressed against the baseline")

// Report judges the files' sweeps against the SLO and writes, per sweep,
// its table, knee and sizing; with a baseline it then compares the knees
// and returns ErrRegressed when one fell by more than MaxDrop.
func Report(w io.Writer, c ReportOptions) error {
	slo := c.SLO
	results, err := judgeFiles(c.Files, slo)
	if err != nil {
		return err
	}
	hourly, currency := c.Hourly, c.Currency
	if len(results) > 1 {
		fmt.Fprintf(w, "The files hold %d sweeps (of different load kinds or settings); each is judged on its own.\n\n", len(results))
	}
	var sizings []Sizing
	for i, res := range results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		peak, price := c.Peak, hourly
		open := openPartner(results, res)
		if open != nil {
			peak, price = 0, 0 // the open loop sizes the fleet
		}
		sizing, err := res.Size(peak, price)
		if err != nil {
			return err
		}
		sizings = append(sizings, sizing)
		if err := res.Write(w, sizing, currency); err != nil {
			return err
		}
		if open != nil {
			writeLoops(w, open, res)
		}
	}
	if c.HTML != nil {
		if err := WriteHTML(c.HTML, results, sizings, currency); err != nil {
			return fmt.Errorf("HTML report: %w", err)
		}
	}
	if len(c.Baseline) == 0 {
		return nil
	}
	bases, err := judgeFiles(c.Baseline, slo)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if len(bases) != len(results) || slices.ContainsFunc(bases, func(b *Result) bool {
		return !slices.ContainsFunc(results, func(r *Result) bool { return r.Kind == b.Kind && r.Setting == b.Setting })
	}) {
		return fmt.Errorf("baseline: its sweeps (%s) are not of the load kinds of the files judged (%s)", kinds(bases), kinds(results))
	}
	var problems []string
	for _, base := range bases {
		i := slices.IndexFunc(results, func(r *Result) bool { return r.Kind == base.Kind && r.Setting == base.Setting })
		bk := base.KneePoint()
		fmt.Fprintf(w, "\nbaseline %s knee: round %d at %s, %s tok/s of goodput\n", base.Kind, bk.Round,
			LoadText(&bk.Point), Thousands(bk.Goodput))
		for _, p := range Compare(base, results[i], c.MaxDrop) {
			problems = append(problems, fmt.Sprintf("%s sweep: %s", base.Kind, p))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "regression gate: pass")
		return nil
	}
	fmt.Fprintf(w, "regression gate: FAIL\n  %s\n", strings.Join(problems, "\n  "))
	return ErrRegressed
}

func kinds(rs []*Result) string {
	var out []string
	for _, r := range rs {
		k := string(r.Kind)
		if r.Setting != "" {
			k += " (" + r.Setting + ")"
		}
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}

// PickSLO is the SLO named name among those of file, or its first when
// name is empty.
func PickSLO(slos []goodput.SLO, name, file string) (goodput.SLO, error) {
	if len(slos) == 0 {
		return goodput.SLO{}, fmt.Errorf("%s declares no slos", file)
	}
	if name == "" {
		return slos[0], nil
	}
	var names []string
	for _, s := range slos {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return goodput.SLO{}, fmt.Errorf("no SLO named %q in %s (it has %s)", name, file, strings.Join(names, ", "))
}

// judgeFiles judges the files' sweeps: one, or a rate sweep and a
// concurrency sweep judged apart where the files hold both.
func judgeFiles(files []string, slo goodput.SLO) ([]*Result, error) {
	sw, err := Read(files...)
	if err != nil {
		return nil, err
	}
	return JudgeEach(sw, slo)
}

// openPartner is the open-loop rate sweep of the same setting as a
// closed-loop sweep res, when the files hold one; nil otherwise.
func openPartner(results []*Result, res *Result) *Result {
	if !res.ClosedLoop() {
		return nil
	}
	for _, r := range results {
		if r != res && r.Kind == LoadRate && r.Setting == res.Setting &&
			!slices.ContainsFunc(r.Points, func(j Judged) bool { return j.ClosedLoop() || j.MaxThroughput }) {
			return r
		}
	}
	return nil
}

// writeLoops sets a closed-loop sweep beside the open-loop sweep of the
// same setup: each closed-loop round at its achieved rate, against the
// open loop's verdict at the lowest offered rate at or above it. The open
// loop decides the capacity.
func writeLoops(w io.Writer, open, closed *Result) {
	fmt.Fprintln(w, "\nboth loops were run on this setup; the open loop decides the capacity, the closed loop is shown beside it:")
	for i := range closed.Points {
		c := &closed.Points[i]
		rate, how := c.AchievedRate()
		verdict := "missed"
		if c.Met {
			verdict = "met"
		}
		if how == "" {
			fmt.Fprintf(w, "  closed loop, %s clients: %s; no achieved rate recorded\n", Sig3(c.Concurrency), verdict)
			continue
		}
		line := fmt.Sprintf("  closed loop, %s clients: %s req/s achieved, %s", Sig3(c.Concurrency), Sig3(rate), verdict)
		at := slices.IndexFunc(open.Points, func(j Judged) bool { return !j.NoLoad && j.Rate >= rate*(1-1e-9) })
		if at < 0 {
			line += "; the open loop was not run at this rate or above"
		} else {
			o := &open.Points[at]
			ov := "missed"
			if o.Met {
				ov = "met"
			}
			line += fmt.Sprintf("; open loop at %s: %s", LoadText(&o.Point), ov)
		}
		fmt.Fprintln(w, line)
	}
	if open.Safe >= 0 {
		p := &open.Points[open.Safe]
		fmt.Fprintf(w, "capacity (open loop): %s, %s tok/s of goodput; replicas and cost are the open-loop sweep's\n", LoadText(&p.Point), Thousands(p.Goodput))
	} else {
		fmt.Fprintln(w, "capacity (open loop): none; no open-loop round met the SLO")
	}
}
