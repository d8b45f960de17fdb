package capacity

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Thousands formats v rounded to a whole number with comma separators.
func Thousands(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(math.Abs(v))), 10)
	var b strings.Builder
	if v < 0 && math.Round(v) != 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Sig3 formats v to three significant digits, without an exponent and
// without trailing zeros: 17 → "17", 1.0096965 → "1.01", 0.1064823 →
// "0.106", 1234.5 → "1235".
func Sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	d := max(2-int(math.Floor(math.Log10(math.Abs(v)))), 0)
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// LoadText names a round's load: "17 req/s" for a rate the tool set,
// "1.55 req/s achieved (synchronous)" where it set none, "max throughput
// (5.86 req/s achieved)", "concurrency 4".
func LoadText(p *Point) string {
	switch {
	case p.NoLoad:
		return "no load recorded"
	case p.Kind == LoadConcurrency:
		return "concurrency " + Sig3(p.Concurrency)
	case p.MaxThroughput:
		return fmt.Sprintf("max throughput (%s req/s achieved)", Sig3(p.Rate))
	case p.RateSet:
		return Sig3(p.Rate) + " req/s"
	case p.Strategy != "":
		return fmt.Sprintf("%s req/s achieved (%s)", Sig3(p.Rate), p.Strategy)
	}
	return Sig3(p.Rate) + " req/s achieved"
}

func loadCell(p *Point) string {
	switch {
	case p.NoLoad:
		return "none recorded"
	case p.Kind == LoadConcurrency:
		return Sig3(p.Concurrency)
	case p.MaxThroughput:
		return "max (" + Sig3(p.Rate) + " achieved)"
	case p.RateSet:
		return Sig3(p.Rate)
	}
	return Sig3(p.Rate) + " achieved"
}

func pctCell(p *Point, k goodput.Kind, pct float64) string {
	v, ok := p.Percentile(k, pct)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(math.Round(v*1e4)/10, 'f', -1, 64)
}

// Describe says how the SLO was judged.
func (r *Result) Describe() string {
	exact, sampled := 0, 0
	for _, p := range r.Points {
		if p.Exact {
			exact++
		}
		if p.Sampled {
			sampled++
		}
	}
	var s string
	switch exact {
	case len(r.Points):
		s = "goodput is from the file's per-request data: the round's throughput times the share of its output tokens that met every objective"
	case 0:
		s = "the file carries only percentiles: each objective's percentile is judged, and a point's whole throughput counts as good when all are met"
	default:
		s = fmt.Sprintf("%d of %d points carry per-request data (goodput from the share of good tokens); the others are judged on their percentiles", exact, len(r.Points))
	}
	if sampled > 0 {
		s += fmt.Sprintf(". In %d round(s) the file lists fewer requests than the tool counted: their goodput is an estimate from that sample", sampled)
	}
	return s
}

// Write prints the judged sweep as a table, then the knee and what it
// sizes. currency labels the cost.
func (r *Result) Write(w io.Writer, s Sizing, currency string) error {
	setting := ""
	if r.Setting != "" {
		setting = " (" + r.Setting + ")"
	}
	fmt.Fprintf(w, "%s %s sweep%s, SLO %q: %s\n", r.Tool, r.Kind, setting, r.SLO.Name, objectivesText(r.SLO))
	fmt.Fprintf(w, "%s.\n", r.Describe())
	facts, missing := r.FactLines()
	for _, l := range facts {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "  not recorded in the files: %s\n", strings.Join(missing, ", "))
	}
	for _, p := range r.Points {
		if p.Kind == LoadRate && !p.RateSet {
			fmt.Fprintln(w, "Rates marked \"achieved\" are what the tool measured: it recorded no offered rate for those rounds.")
			break
		}
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	axis := "rate (req/s)"
	if r.Kind == LoadConcurrency {
		axis = "concurrency"
	}
	achievedHead := ""
	if r.Kind == LoadConcurrency {
		achievedHead = "achieved (req/s)\t"
	}
	fmt.Fprintf(tw, "round\t%s\t%sTTFT P99 (ms)\tITL P50 (ms)\tthroughput (tok/s)\tgoodput (tok/s)\tSLO\t\n", axis, achievedHead)
	littles := false
	for i := range r.Points {
		p := &r.Points[i]
		achieved := ""
		if r.Kind == LoadConcurrency {
			v, how := p.AchievedRate()
			switch {
			case how == "":
				achieved = "-\t"
			case how == "measured":
				achieved = Sig3(v) + "\t"
			default:
				achieved = Sig3(v) + " (L)\t"
				littles = true
			}
		}
		verdict := p.verdict()
		if i == r.Knee && p.Goodput > 0 {
			verdict += ", knee"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s%s\t%s\t%s\t%s\t%s\t\n", p.Round, loadCell(&p.Point), achieved, pctCell(&p.Point, goodput.KindTTFT, 99),
			pctCell(&p.Point, goodput.KindITL, 50), Thousands(p.Throughput), Thousands(p.Goodput), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if littles {
		fmt.Fprintln(w, "(L): the file records no achieved rate; it is clients ÷ mean request latency, by Little's law (no think time).")
	}
	for i := range r.Points {
		p := &r.Points[i]
		if lo, hi, ok := p.Spread(); ok {
			how := "their mean, met only if every run met the SLO"
			if p.Pooled {
				how = "their requests pooled and judged as one round"
			}
			spread := 0.0
			if hi > 0 {
				spread = 100 * (hi - lo) / hi
			}
			fmt.Fprintf(w, "round %d (%s) is %d runs at one load (%s): goodput %s to %s tok/s, a spread of %.1f%%\n",
				p.Round, LoadText(&p.Point), len(p.Repeats), how, Thousands(lo), Thousands(hi), spread)
		}
		if p.NoLoad {
			fmt.Fprintf(w, "round %d (%s) records no load (no rate, concurrency or achieved rate) and no successful request: listed, not placed on the load axis\n",
				p.Round, p.Source)
		}
	}
	if err := r.writeDistributions(w); err != nil {
		return err
	}
	if err := r.writeEnergy(w); err != nil {
		return err
	}
	k := r.KneePoint()
	fmt.Fprintln(w)
	switch {
	case k.Goodput == 0:
		fmt.Fprintln(w, "no knee: no round had goodput under the SLO")
	case r.KneeReached:
		fmt.Fprintf(w, "knee: round %d at %s, %s tok/s of goodput\n", k.Round, LoadText(&k.Point), Thousands(k.Goodput))
	default:
		fmt.Fprintf(w, "knee not reached: no round at a load above round %d (%s) missed the SLO; capacity is at least %s tok/s of goodput (a lower bound)\n",
			k.Round, LoadText(&k.Point), Thousands(k.Goodput))
	}
	if r.Kind == LoadConcurrency && len(r.Points) >= 2 {
		a, b := &r.Points[len(r.Points)-2], &r.Points[len(r.Points)-1]
		if !a.NoLoad && !b.NoLoad && a.Throughput > 0 && b.Throughput > a.Throughput*1.05 {
			fmt.Fprintf(w, "throughput never flattened: it still rose %.0f%% from %s to %s clients, so the sweep stopped below the server's limit\n",
				100*(b.Throughput/a.Throughput-1), Sig3(a.Concurrency), Sig3(b.Concurrency))
		}
	}
	if name, why, ok := r.Bottleneck(); ok {
		fmt.Fprintf(w, "bottleneck past the knee: %s (%s)\n", name, why)
	}
	if r.Safe >= 0 {
		p := &r.Points[r.Safe]
		fmt.Fprintf(w, "safe capacity: %s (round %d), the highest load that met the SLO, %s tok/s of goodput\n",
			LoadText(&p.Point), p.Round, Thousands(p.Goodput))
		if r.ClosedLoop() {
			rate, how := p.AchievedRate()
			at := "no achieved rate recorded"
			if how != "" {
				at = fmt.Sprintf("%s req/s achieved (%s)", Sig3(rate), how)
			}
			fmt.Fprintf(w, "warning: measured in a closed loop of %s clients (%s), not an open-loop capacity. In a closed loop a slow server slows its own clients, so the queue that makes the tail never forms: an open loop (Poisson arrivals) at the same rate will see a worse tail, and may miss the SLO where this met it. Size from an open-loop sweep.\n",
				Sig3(p.Concurrency), at)
		}
	} else {
		fmt.Fprintln(w, "safe capacity: none; no round met the SLO")
	}
	if s.Peak > 0 {
		bound := ""
		if !r.KneeReached {
			bound = "; at most, since the knee's goodput is a lower bound"
		}
		if s.Replicas > 0 {
			fmt.Fprintf(w, "replicas for %s tok/s at peak: %d (%s / %s = %.3f%s)\n", Thousands(s.Peak), s.Replicas,
				Thousands(s.Peak), Thousands(k.Goodput), s.Peak/k.Goodput, bound)
		} else {
			fmt.Fprintf(w, "replicas for %s tok/s at peak: none can be sized; no round had goodput under the SLO\n", Thousands(s.Peak))
		}
	}
	switch {
	case s.HasCost && s.AtKnee:
		fmt.Fprintf(w, "cost at the knee: %.2f %s per million good tokens (%.2f %s/h a replica)\n",
			s.CostPerMillion, currency, s.HourlyCost, currency)
	case s.HasCost:
		p := &r.Points[s.At]
		fmt.Fprintf(w, "cost at the best passing round (round %d, %s; not a knee, which was not reached): %.2f %s per million good tokens (%.2f %s/h a replica)\n",
			p.Round, LoadText(&p.Point), s.CostPerMillion, currency, s.HourlyCost, currency)
	case s.HourlyCost > 0 && s.At < 0:
		fmt.Fprintln(w, "no cost: the knee was not reached and no round met the SLO, so there are no good tokens to price")
	}
	if s.HasCost && s.TaskTokens > 0 {
		fmt.Fprintf(w, "cost per successful task: %.4f %s (%s good tokens a task ÷ a success rate of %g: %.2f × %s / 10⁶ / %g)\n",
			s.TaskCost(), currency, Sig3(s.TaskTokens), s.TaskSuccess, s.CostPerMillion, Sig3(s.TaskTokens), s.TaskSuccess)
	}
	defer r.writeAudit(w)
	if s.JoulesPerToken > 0 {
		where := "at the knee"
		if !s.AtKnee {
			where = fmt.Sprintf("at the best passing round (%d)", r.Points[s.At].Round)
		}
		fmt.Fprintf(w, "energy %s: %.3f J per good token (GPU energy over the round's window)\n", where, s.JoulesPerToken)
	}
	return nil
}

func objectivesText(slo goodput.SLO) string {
	var parts []string
	for _, o := range slo.Objectives {
		if o.Kind == goodput.KindError {
			parts = append(parts, fmt.Sprintf("error-free %g%%", 100*o.Target))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s P%g <= %gms", strings.ToUpper(string(o.Kind)), math.Round(o.Target*1000)/10,
			math.Round(o.Threshold*1e6)/1000))
	}
	return strings.Join(parts, ", ")
}

// verdict says whether the point met the SLO, as the report's tables
// write it: met, missed, or missed with no successful request, and how
// many runs it stands for when repeated.
func (p *Judged) verdict() string {
	v := "missed"
	switch {
	case p.Met:
		v = "met"
	case p.Failed:
		v = "missed (no successful request)"
	}
	if len(p.Repeats) > 1 {
		v += fmt.Sprintf(", %d runs", len(p.Repeats))
	}
	return v
}
