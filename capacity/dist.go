package capacity

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// distPcts are the percentiles of the distributions table.
var distPcts = []float64{50, 90, 99, 99.9}

// writeDistributions prints, per round with per-request data, P50, P90,
// P99 and P99.9 of TTFT and ITL: two runs with one P99 can differ in the
// tail beyond it.
func (r *Result) writeDistributions(w io.Writer) error {
	any := false
	for _, p := range r.Points {
		any = any || (p.Requests != nil && !p.Failed)
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w, "\nlatency distributions from the per-request data (ms):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "round\t"
	for _, k := range []string{"TTFT", "ITL"} {
		for _, p := range distPcts {
			head += fmt.Sprintf("%s P%g\t", k, p)
		}
	}
	fmt.Fprintln(tw, head)
	for _, p := range r.Points {
		if p.Requests == nil || p.Failed {
			continue
		}
		pcts := requestPercentiles(p.Requests)
		line := fmt.Sprintf("%d\t", p.Round)
		for _, k := range []goodput.Kind{goodput.KindTTFT, goodput.KindITL} {
			for _, q := range distPcts {
				if v, ok := pcts[k][q]; ok {
					line += Sig3(v*1000) + "\t"
				} else {
					line += "-\t"
				}
			}
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// pctPair is the highest of P99, P90 and P50 that both rounds carry for
// kind, and its values.
func pctPair(a, b *Judged, kind goodput.Kind) (pct, va, vb float64, ok bool) {
	for _, q := range []float64{99, 90, 50} {
		x, okA := a.Percentile(kind, q)
		y, okB := b.Percentile(kind, q)
		if okA && okB && x > 0 {
			return q, x, y, true
		}
	}
	return 0, 0, 0, false
}

// Bottleneck names what breaks first past the knee: "prefill" when TTFT
// breaks first, "decode" when the inter-token latency does. It compares
// the first round above the knee that missed the SLO with the lowest
// load: where only one of the SLO's TTFT and ITL/TPOT objectives missed
// there, that one broke first; otherwise the latency that grew more, by
// its highest percentile both rounds carry. ok is false when no round
// past the knee missed, or the files lack the figures.
func (r *Result) Bottleneck() (name, evidence string, ok bool) {
	if !r.KneeReached {
		return "", "", false
	}
	f := -1
	for i := r.Knee + 1; i < len(r.Points); i++ {
		if !r.Points[i].Met && !r.Points[i].Failed && !r.Points[i].NoLoad {
			f = i
			break
		}
	}
	if f < 0 {
		return "", "", false
	}
	lo, hi := &r.Points[0], &r.Points[f]
	decodeKind := goodput.KindITL
	if _, _, _, ok := pctPair(lo, hi, decodeKind); !ok {
		decodeKind = goodput.KindTPOT
	}
	missed := map[goodput.Kind]bool{}
	for i, o := range r.SLO.Objectives {
		if i < len(hi.Attainment) && hi.Attainment[i] < o.Target {
			missed[o.Kind] = true
		}
	}
	decodeMissed := missed[goodput.KindITL] || missed[goodput.KindTPOT]
	var parts []string
	growth := map[string]float64{}
	for _, k := range []goodput.Kind{goodput.KindTTFT, decodeKind} {
		q, a, b, ok := pctPair(lo, hi, k)
		if !ok {
			continue
		}
		g := b / a
		name := "prefill"
		if k != goodput.KindTTFT {
			name = "decode"
		}
		growth[name] = g
		parts = append(parts, fmt.Sprintf("%s P%g %s → %s ms, ×%.2f", strings.ToUpper(string(k)), q, Sig3(a*1000), Sig3(b*1000), g))
	}
	span := fmt.Sprintf(" from round %d (%s) to round %d (%s)", lo.Round, LoadText(&lo.Point), hi.Round, LoadText(&hi.Point))
	switch {
	case missed[goodput.KindTTFT] && !decodeMissed && sloHas(r.SLO, goodput.KindITL, goodput.KindTPOT):
		return "prefill", "TTFT broke first: its objective missed at round " + fmt.Sprint(hi.Round) + ", the inter-token one did not; " + strings.Join(parts, "; ") + span, true
	case decodeMissed && !missed[goodput.KindTTFT] && sloHas(r.SLO, goodput.KindTTFT):
		return "decode", "the inter-token latency broke first: its objective missed at round " + fmt.Sprint(hi.Round) + ", TTFT's did not; " + strings.Join(parts, "; ") + span, true
	}
	gp, okP := growth["prefill"]
	gd, okD := growth["decode"]
	if !okP || !okD || math.IsNaN(gp) || math.IsNaN(gd) {
		return "", "", false
	}
	if gp >= gd {
		return "prefill", "TTFT grew more: " + strings.Join(parts, "; ") + span, true
	}
	return "decode", "the inter-token latency grew more: " + strings.Join(parts, "; ") + span, true
}

// sloHas reports an objective of one of kinds in slo.
func sloHas(slo goodput.SLO, kinds ...goodput.Kind) bool {
	for _, o := range slo.Objectives {
		if slices.Contains(kinds, o.Kind) {
			return true
		}
	}
	return false
}
