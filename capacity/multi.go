package capacity

import (
	"errors"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// ReportEach judges the same files against every SLO in slos, one report
// after the other (a node has no capacity apart from an SLO), then one
// table of each SLO's knee and safe capacity. An SLO the files cannot be
// judged on (an objective they carry no figure for) is said, and the
// others are reported. The gate trips (ErrRegressed) when it trips under
// any SLO; a baseline that is not comparable is refused
// (ErrNotComparable) before any regression is called. c.SLO is ignored;
// c.HTML receives one page with every SLO's sweeps.
func ReportEach(w io.Writer, c ReportOptions, slos []goodput.SLO) error {
	type row struct {
		slo     string
		results []*Result
		err     error
	}
	var (
		rows          []row
		all           []*Result
		sizings       []Sizing
		regressed     bool
		notComparable bool
	)
	for i, slo := range slos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "=== SLO %q ===\n", slo.Name)
		c.SLO = slo
		res, sz, err := report(w, c)
		switch {
		case errors.Is(err, ErrRegressed):
			regressed = true
		case errors.Is(err, ErrNotComparable):
			notComparable = true
		case err != nil:
			fmt.Fprintf(w, "SLO %q cannot be judged on these files: %v\n", slo.Name, err)
		}
		rows = append(rows, row{slo.Name, res, err})
		all, sizings = append(all, res...), append(sizings, sz...)
	}
	fmt.Fprintf(w, "\none knee per SLO, on the same sweep:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLO\tsweep\tknee\tsafe capacity\t")
	for _, r := range rows {
		if len(r.results) == 0 {
			fmt.Fprintf(tw, "%s\t-\tnot judged\t-\t\n", r.slo)
			continue
		}
		for _, res := range r.results {
			k := res.KneePoint()
			knee := "none"
			switch {
			case k.Goodput > 0 && res.KneeReached:
				knee = fmt.Sprintf("%s, %s tok/s", LoadText(&k.Point), Thousands(k.Goodput))
			case k.Goodput > 0:
				knee = fmt.Sprintf("not reached (at least %s tok/s at %s)", Thousands(k.Goodput), LoadText(&k.Point))
			}
			safe := "none"
			if res.Safe >= 0 {
				p := &res.Points[res.Safe]
				safe = fmt.Sprintf("%s, %s tok/s", LoadText(&p.Point), Thousands(p.Goodput))
			}
			name := string(res.Kind)
			if res.Setting != "" {
				name += " (" + res.Setting + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", r.slo, name, knee, safe)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c.HTML != nil && len(all) > 0 {
		if err := WriteHTML(c.HTML, all, sizings, c.Currency); err != nil {
			return fmt.Errorf("HTML report: %w", err)
		}
	}
	switch {
	case notComparable:
		return ErrNotComparable
	case regressed:
		return ErrRegressed
	}
	judged := false
	for _, r := range rows {
		judged = judged || len(r.results) > 0
	}
	if !judged {
		return errors.New("no SLO could be judged on these files")
	}
	return nil
}
