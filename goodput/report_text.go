package goodput

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteReport prints r as plain-text tables: a header, one line per
// objective, then one line per SLO with the joint goodput. The output
// depends on r only, so it can be compared with a golden file.
func WriteReport(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s (%s), window %v", r.Target, r.Engine, r.Window)
	if r.Cost != nil {
		fmt.Fprintf(&b, ", cost %s %s/h", num(r.Cost.Hourly, 2), r.Cost.Currency)
	}
	b.WriteString("\n")
	if r.Restarted {
		b.WriteString("the engine restarted within the window: counts cover the time since\n")
	}
	b.WriteString("\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tSLO\tOBJECTIVE\tTHRESHOLD\tTARGET\tJUDGED\tGOOD\tATTAINMENT\tMET\tINTERPOLATED\tSOURCE")
	for _, row := range r.Rows {
		for _, o := range row.Objectives {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", row.Model, row.SLO, o.Objective.Kind,
				threshold(o.Objective), num(o.Objective.Target, -1), objectiveCells(o))
		}
	}
	tw.Flush()

	cur := "COST/1M"
	if r.Cost != nil {
		cur = r.Cost.Currency + "/1M"
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "MODEL\tSLO\tGOODPUT\tGOOD REQ/S\tGOOD TOK/S\t%s GOOD TOK\tREQUESTS\tREQUESTS FROM\n", cur)
	estimated := false
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", row.Model, row.SLO, jointCells(row))
		estimated = estimated || tokensEstimated(row.Joint)
	}
	tw.Flush()
	if estimated {
		b.WriteString("~ an estimate, not bounds: the engine publishes no per-request output-length histogram\n" +
			"  (or an objective is judged per token), so good tokens are the window's generation tokens times\n" +
			"  the joint attainment bounds; the lower one is too high when failing requests run longer than passing ones;\n" +
			"  exact goodput, request by request: the measuring proxy (docs/proxy.md)\n")
	}
	if len(r.Unmatched) > 0 {
		fmt.Fprintf(&b, "\nmodels no SLO applies to: %s\n", strings.Join(r.Unmatched, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func objectiveCells(o ReportObjective) string {
	src := o.Resolution.Source
	switch {
	case !o.Resolution.Supported:
		return "-\t-\tunsupported\t-\t-\t-"
	case o.Objective.Kind == KindError:
		src = "finish reasons"
		if o.Objective.IncludeAbort {
			src += " (aborts count)"
		}
		src += fmt.Sprintf(", %s aborted", num(o.Counts.Aborted, 0))
	case o.Resolution.Fallback:
		src += " (tpot fallback, per token)"
	}
	if src == "" {
		src = "-"
	}
	if !o.HasAttainment {
		return fmt.Sprintf("0\t-\tno traffic\t-\t-\t%s", src)
	}
	met := "no"
	if o.Met {
		met = "yes"
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", num(o.Counts.Judged, 0), num(o.Counts.Good, 1),
		num(o.Attainment, 4), met, num(o.Counts.Interpolated, 1), src)
}

func jointCells(row ReportRow) string {
	j := row.Joint
	switch {
	case !j.Supported:
		var missing []string
		for _, o := range row.Objectives {
			if !o.Resolution.Supported {
				missing = append(missing, string(o.Objective.Kind))
			}
		}
		return fmt.Sprintf("not computed: %s unsupported\t-\t-\t-\t-\t-", strings.Join(missing, ", "))
	case !j.Computed:
		return "no traffic\t-\t-\t-\t-\t-"
	}
	reqs, from := "-", "-"
	if j.RequestsSource != "" {
		reqs, from = span(j.Lower.RequestsPerSecond, j.Upper.RequestsPerSecond, 2), j.RequestsSource
	}
	toks, cost := "-", "-"
	mark := ""
	if tokensEstimated(j) {
		mark = "~"
	}
	if j.HasTokens {
		toks = mark + span(j.Lower.TokensPerSecond, j.Upper.TokensPerSecond, 1)
	}
	if j.Upper.HasCost {
		// The cheapest cost is at the upper goodput.
		hi := "-"
		if j.Lower.HasCost {
			hi = num(j.Lower.CostPerMillionTokens, 2)
		}
		cost = mark + num(j.Upper.CostPerMillionTokens, 2) + ".." + hi
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", span(j.Attainment.Lower, j.Attainment.Upper, 4),
		reqs, toks, cost, num(j.Requests, 0), from)
}

func threshold(o Objective) string {
	if !o.Kind.Latency() {
		return "-"
	}
	return time.Duration(o.Threshold * float64(time.Second)).String()
}

// num formats v with prec decimals (-1: as few as needed).
func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func span(lo, hi float64, prec int) string { return num(lo, prec) + ".." + num(hi, prec) }

// tokensEstimated: a window with good tokens that are not bounds.
func tokensEstimated(j ReportJoint) bool {
	return j.Supported && j.Computed && j.HasTokens && !j.TokensBounded
}
