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

func pctCell(p *Point, k goodput.Kind, pct float64) string {
	v, ok := p.Percentile(k, pct)
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(math.Round(v*1e4)/10, 'f', -1, 64)
}

// Describe says how the SLO was judged.
func (r *Result) Describe() string {
	exact := 0
	for _, p := range r.Points {
		if p.Exact {
			exact++
		}
	}
	switch exact {
	case len(r.Points):
		return "goodput is exact: the file carries per-request data"
	case 0:
		return "the file carries only percentiles: each objective's percentile is judged, and a point's whole throughput counts as good when all are met"
	}
	return fmt.Sprintf("%d of %d points carry per-request data (exact goodput); the others are judged on their percentiles", exact, len(r.Points))
}

// Write prints the judged sweep as a table, then the knee and what it
// sizes. currency labels the cost.
func (r *Result) Write(w io.Writer, s Sizing, currency string) error {
	fmt.Fprintf(w, "%s sweep, SLO %q: %s\n", r.Tool, r.SLO.Name, objectivesText(r.SLO))
	fmt.Fprintf(w, "%s.\n\n", r.Describe())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\trate (req/s)\tTTFT P99 (ms)\tITL P50 (ms)\tthroughput (tok/s)\tgoodput (tok/s)\tSLO\t")
	for i := range r.Points {
		p := &r.Points[i]
		verdict := "missed"
		if p.Met {
			verdict = "met"
		}
		if i == r.Knee {
			verdict += ", knee"
		}
		fmt.Fprintf(tw, "%d\t%g\t%s\t%s\t%s\t%s\t%s\t\n", p.Round, p.Rate, pctCell(&p.Point, goodput.KindTTFT, 99),
			pctCell(&p.Point, goodput.KindITL, 50), Thousands(p.Throughput), Thousands(p.Goodput), verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	k := r.KneePoint()
	fmt.Fprintln(w)
	if r.KneeReached {
		fmt.Fprintf(w, "knee: round %d at %g req/s, %s tok/s of goodput\n", k.Round, k.Rate, Thousands(k.Goodput))
	} else {
		fmt.Fprintf(w, "knee not reached: goodput still rose at the last round (%d, %g req/s); capacity is at least %s tok/s of goodput (a lower bound)\n",
			k.Round, k.Rate, Thousands(k.Goodput))
	}
	if r.Safe >= 0 {
		p := &r.Points[r.Safe]
		fmt.Fprintf(w, "safe capacity: %g req/s (round %d), the highest rate that met the SLO, %s tok/s of goodput\n",
			p.Rate, p.Round, Thousands(p.Goodput))
	} else {
		fmt.Fprintln(w, "safe capacity: none; no round met the SLO")
	}
	if s.Peak > 0 {
		fmt.Fprintf(w, "replicas for %s tok/s at peak: %d (%s / %s = %.3f)\n", Thousands(s.Peak), s.Replicas,
			Thousands(s.Peak), Thousands(k.Goodput), s.Peak/k.Goodput)
	}
	if s.HasCost {
		fmt.Fprintf(w, "cost at the knee: %.2f %s per million good tokens (%.2f %s/h a replica)\n",
			s.CostPerMillion, currency, s.HourlyCost, currency)
	}
	if s.JoulesPerToken > 0 {
		fmt.Fprintf(w, "energy at the knee: %.3f J per good token (GPU energy over the round's window)\n", s.JoulesPerToken)
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
