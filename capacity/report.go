package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
	// TaskTokens and TaskSuccess turn the cost per good token into the
	// cost per successful task (0: not asked).
	TaskTokens, TaskSuccess float64
	// Energy, when set, reads each round's GPU energy from Prometheus.
	Energy *EnergyQuery
	Ctx    context.Context
	// CompareAnyway compares a baseline that measured something else,
	// saying what differs, instead of refusing (ErrNotComparable).
	CompareAnyway bool
	// HTML, when set, receives the self-contained HTML page of the
	// judged sweeps (WriteHTML).
	HTML io.Writer
}

// ErrRegressed is Report's error when the gate trips; its reasons were
// written already.
var ErrRegressed = errors.New("capacity regressed against the baseline")

// ErrNotComparable is Report's error when the baseline measured something
// else (another tool, model, token distribution or arrival process); the
// differences were written already. It is not a regression.
var ErrNotComparable = errors.New("the baseline is not comparable: it measured something else")

// Report judges the files' sweeps against the SLO and writes, per sweep,
// its table, knee and sizing; with a baseline it then compares the knees
// and returns ErrRegressed when one fell by more than MaxDrop.
func Report(w io.Writer, c ReportOptions) error {
	results, sizings, err := report(w, c)
	if c.HTML != nil && len(results) > 0 {
		if herr := WriteHTML(c.HTML, results, sizings, c.Currency); herr != nil {
			return errors.Join(err, fmt.Errorf("HTML report: %w", herr))
		}
	}
	return err
}

// report is Report without the page: it returns the judged sweeps and
// their sizing for one.
func report(w io.Writer, c ReportOptions) ([]*Result, []Sizing, error) {
	slo := c.SLO
	sw, err := Read(c.Files...)
	if err != nil {
		return nil, nil, err
	}
	if c.Energy != nil {
		ctx := c.Ctx
		if ctx == nil {
			ctx = context.Background()
		}
		if err := c.Energy.Attach(ctx, sw); err != nil {
			return nil, nil, err
		}
	}
	results, err := JudgeEach(sw, slo)
	if err != nil {
		return nil, nil, err
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
			return nil, nil, err
		}
		sizing.TaskTokens, sizing.TaskSuccess = c.TaskTokens, c.TaskSuccess
		sizings = append(sizings, sizing)
		if err := res.Write(w, sizing, currency); err != nil {
			return nil, nil, err
		}
		if open != nil {
			writeLoops(w, open, res)
		}
	}
	if len(c.Baseline) == 0 {
		return results, sizings, nil
	}
	bases, err := judgeFiles(c.Baseline, slo)
	if err != nil {
		return results, sizings, fmt.Errorf("baseline: %w", err)
	}
	pairs, unpaired := pair(bases, results)
	if len(unpaired) > 0 {
		return results, sizings, fmt.Errorf("baseline: its sweeps (%s) are not of the load kinds of the files judged (%s)", kinds(bases), kinds(results))
	}
	var diffs []string
	for _, pr := range pairs {
		for _, d := range Differences(pr[0], pr[1]) {
			diffs = append(diffs, fmt.Sprintf("%s sweep: %s", pr[1].Kind, d))
		}
	}
	if len(diffs) > 0 {
		if !c.CompareAnyway {
			fmt.Fprintf(w, "\nregression gate: NOT COMPARABLE; the baseline measured something else, so no difference between them is a regression:\n  %s\n"+
				"(--compare-anyway compares them regardless)\n", strings.Join(diffs, "\n  "))
			return results, sizings, ErrNotComparable
		}
		fmt.Fprintf(w, "\ncompared anyway (--compare-anyway), although the baseline differs:\n  %s\n", strings.Join(diffs, "\n  "))
	}
	var problems []string
	for _, pr := range pairs {
		base, cur := pr[0], pr[1]
		bk := base.KneePoint()
		fmt.Fprintf(w, "\nbaseline %s knee: round %d at %s, %s tok/s of goodput\n", base.Kind, bk.Round,
			LoadText(&bk.Point), Thousands(bk.Goodput))
		if line := plannerTerms(base, cur, c.Peak, hourly, currency); line != "" {
			fmt.Fprintln(w, line)
		}
		for _, p := range Compare(base, cur, c.MaxDrop) {
			problems = append(problems, fmt.Sprintf("%s sweep: %s", base.Kind, p))
		}
	}
	if len(problems) == 0 {
		fmt.Fprintln(w, "regression gate: pass")
		return results, sizings, nil
	}
	fmt.Fprintf(w, "regression gate: FAIL\n  %s\n", strings.Join(problems, "\n  "))
	return results, sizings, ErrRegressed
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
// open loop's verdict at the lowest offered rate at or above it (within
// 2 %). The open loop decides the capacity.
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
		// within 2 %: a rate set from a measured one is rounded
		at := slices.IndexFunc(open.Points, func(j Judged) bool { return !j.NoLoad && j.Rate >= rate*0.98 })
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

// pair matches each baseline sweep with the judged sweep of its load kind
// and setting, else the only one of its load kind (a changed engine
// setting is what a gate compares); unpaired lists the baseline sweeps
// left over.
func pair(bases, results []*Result) (pairs [][2]*Result, unpaired []*Result) {
	used := map[*Result]bool{}
	for _, b := range bases {
		i := slices.IndexFunc(results, func(r *Result) bool { return !used[r] && r.Kind == b.Kind && r.Setting == b.Setting })
		if i < 0 {
			var same []int
			for j, r := range results {
				if !used[r] && r.Kind == b.Kind {
					same = append(same, j)
				}
			}
			if len(same) == 1 {
				i = same[0]
			}
		}
		if i < 0 {
			unpaired = append(unpaired, b)
			continue
		}
		used[results[i]] = true
		pairs = append(pairs, [2]*Result{b, results[i]})
	}
	if len(bases) != len(results) && len(unpaired) == 0 {
		for _, r := range results {
			if !used[r] {
				unpaired = append(unpaired, r)
			}
		}
	}
	return pairs, unpaired
}

// meanOf is the mean over the rounds of a known token mean; ok is false
// when no round records one.
func meanOf(r *Result, f func(p *Judged) Dist) (float64, bool) {
	var s float64
	n := 0
	for i := range r.Points {
		if d := f(&r.Points[i]); d.Known {
			s += d.Mean
			n++
		}
	}
	return s / float64(max(n, 1)), n > 0
}

// tokenTolerance is how far the mean token counts of two sweeps may be
// apart and still be one token distribution.
const tokenTolerance = 0.10

// Differences names what makes base and cur measurements of different
// things: the tool, the model, the token distributions (a data set, or
// mean input or output tokens more than 10 % apart) and the arrival
// process. A fact one of the files does not record is not a difference.
func Differences(base, cur *Result) []string {
	var out []string
	if base.Tool != cur.Tool {
		out = append(out, fmt.Sprintf("tool: %s, the baseline %s", cur.Tool, base.Tool))
	}
	for _, f := range []struct {
		name string
		get  func(p *Judged) string
	}{
		{"model", func(p *Judged) string { return p.Facts.Model }},
		{"arrival process", func(p *Judged) string {
			if p.ClosedLoop() {
				return ArrivalClosed
			}
			return p.Facts.Arrival
		}},
	} {
		b, c := base.distinct(f.get), cur.distinct(f.get)
		if len(b) > 0 && len(c) > 0 && strings.Join(b, "; ") != strings.Join(c, "; ") {
			out = append(out, fmt.Sprintf("%s: %s, the baseline %s", f.name, strings.Join(c, "; "), strings.Join(b, "; ")))
		}
	}
	if strings.HasPrefix(base.Setting, "data set") && strings.HasPrefix(cur.Setting, "data set") && base.Setting != cur.Setting {
		out = append(out, fmt.Sprintf("token distribution: %s, the baseline %s", cur.Setting, base.Setting))
	}
	for _, t := range []struct {
		name string
		get  func(p *Judged) Dist
	}{
		{"input", func(p *Judged) Dist { return p.Facts.InputTokens }},
		{"output", func(p *Judged) Dist { return p.Facts.OutputTokens }},
	} {
		b, bok := meanOf(base, t.get)
		c, cok := meanOf(cur, t.get)
		if bok && cok && math.Abs(c-b) > tokenTolerance*max(b, c) {
			out = append(out, fmt.Sprintf("token distribution: mean %s tokens %s a request, the baseline %s (more than %g%% apart)",
				t.name, Sig3(c), Sig3(b), 100*tokenTolerance))
		}
	}
	return out
}

// plannerTerms says a comparison as a planner reads it: the change in
// goodput at the knee under this SLO, in replicas at peak and in cost per
// million good tokens.
func plannerTerms(base, cur *Result, peak, hourly float64, currency string) string {
	b, c := base.KneePoint().Goodput, cur.KneePoint().Goodput
	if !(b > 0 && c > 0) {
		return ""
	}
	sign := "+"
	if c < b {
		sign = ""
	}
	line := fmt.Sprintf("goodput at the knee under SLO %q: %s tok/s, the baseline %s (%s%s tok/s)", cur.SLO.Name, Thousands(c), Thousands(b), sign, Thousands(c-b))
	if c-b == 0 {
		line = fmt.Sprintf("goodput at the knee under SLO %q: %s tok/s, as the baseline", cur.SLO.Name, Thousands(c))
	}
	if peak > 0 {
		nb, errb := goodput.Replicas(peak, b)
		nc, errc := goodput.Replicas(peak, c)
		if errb == nil && errc == nil {
			switch {
			case nc < nb:
				line += fmt.Sprintf(" = %d fewer replicas at %s tok/s peak (%d, the baseline %d)", nb-nc, Thousands(peak), nc, nb)
			case nc > nb:
				line += fmt.Sprintf(" = %d more replicas at %s tok/s peak (%d, the baseline %d)", nc-nb, Thousands(peak), nc, nb)
			default:
				line += fmt.Sprintf(" = the same %d replicas at %s tok/s peak", nc, Thousands(peak))
			}
		}
	}
	if hourly > 0 {
		cb, okb := goodput.CostPerMillionGoodTokens(hourly, b)
		cc, okc := goodput.CostPerMillionGoodTokens(hourly, c)
		if okb && okc {
			verb := "less"
			if cc > cb {
				verb = "more"
			}
			line += fmt.Sprintf(", %.2f %s %s per million good tokens (%.2f, the baseline %.2f)", math.Abs(cb-cc), currency, verb, cc, cb)
		}
	}
	return line
}
