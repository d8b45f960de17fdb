package accuracy

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// Knee returns the rate with the highest goodput of SLO k, from the truth
// or from one of the live bounds ("lower", "upper").
func Knee(steps []Step, k int, from string) (goodput.SweepStep, error) {
	var pts []goodput.SweepStep
	for _, s := range steps {
		g := s.SLOs[k].TrueGoodput
		switch from {
		case "lower":
			g = s.SLOs[k].LiveGoodput.Lower
		case "upper":
			g = s.SLOs[k].LiveGoodput.Upper
		}
		pts = append(pts, goodput.SweepStep{Rate: s.Rate, TTFTP99: s.TTFTP99.Seconds(), Throughput: s.Throughput, Goodput: g})
	}
	return goodput.Knee(pts)
}

// WriteTable prints one line per step and SLO: the sweep (rate, TTFT P99,
// throughput), goodput tokens per second (the truth, the exported bounds,
// whether the truth lies in them, and the former estimate), the joint share
// of good requests (truth, exported bounds, edge share, whether the truth
// lies in them), and each objective's true and live attainment with the
// error in percentage points.
func WriteTable(w io.Writer, steps []Step) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RATE\tTTFT P99\tTHROUGHPUT\tSLO\tTRUE GOODPUT\tLIVE GOODPUT\tTOK IN BAND\tFORMER ESTIMATE\tTRUE JOINT\tLIVE JOINT\tEDGE\tREQ IN BAND\tOBJECTIVES (true/live, error pp; * = threshold between bounds)")
	for _, s := range steps {
		for _, r := range s.SLOs {
			var objs []string
			for _, o := range r.Objectives {
				mark := ""
				if !o.OnBound {
					mark = "*"
				}
				if !o.Known {
					objs = append(objs, fmt.Sprintf("%s%s n/a", o.Kind, mark))
					continue
				}
				objs = append(objs, fmt.Sprintf("%s%s %.4f/%.4f %+.2f", o.Kind, mark, o.True, o.Live, o.ErrorPP()))
			}
			tokBand := r.TokensBand()
			if !r.TokensBounded && tokBand != "n/a" {
				tokBand += " (estimate)"
			}
			fmt.Fprintf(tw, "%g\t%v\t%.0f\t%s\t%.0f\t%.0f..%.0f\t%s\t%.0f..%.0f\t%.4f\t%.4f..%.4f\t%.4f\t%s\t%s\n",
				s.Rate, s.TTFTP99.Round(1e6), s.Throughput, r.SLO, r.TrueGoodput, r.LiveGoodput.Lower, r.LiveGoodput.Upper,
				tokBand, r.NaiveGoodput.Lower, r.NaiveGoodput.Upper,
				r.TrueJoint, r.LiveJoint.Lower, r.LiveJoint.Upper, r.Edge, r.Band(), strings.Join(objs, "; "))
		}
	}
	return tw.Flush()
}
