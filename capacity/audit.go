package capacity

import (
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
)

// AuditLine is one line of the checklist of a defensible sweep, with its
// evidence from the files.
type AuditLine struct {
	Check    string
	Pass     bool
	Evidence string
}

var hasDigit = regexp.MustCompile(`[0-9]`)

// Audit is the checklist of a defensible sweep: realistic load, a
// declared SLO, extended past the knee, goodput rather than throughput,
// an open loop, the client's place, versioned output with its metadata,
// and energy measured alongside. A sweep that fails any line is an
// anecdote, not a capacity.
func (r *Result) Audit() []AuditLine {
	var out []AuditLine
	add := func(check string, pass bool, ev string) { out = append(out, AuditLine{check, pass, ev}) }

	// realistic load: a distribution of lengths, not one fixed length
	var ds []string
	fixed, shown := false, false
	for i := range r.Points {
		f := &r.Points[i].Facts
		for _, d := range []Dist{f.InputTokens, f.OutputTokens} {
			p50, ok50 := d.Pcts[50]
			p99, ok99 := d.Pcts[99]
			if ok50 && ok99 {
				shown = true
				if p50 == p99 {
					fixed = true
				}
			}
		}
	}
	switch {
	case strings.HasPrefix(r.Setting, "data set ") && !strings.HasPrefix(r.Setting, "data set random"):
		add("realistic load", true, r.Setting)
	case fixed:
		in, out := r.distinct(func(p *Judged) string { return p.Facts.InputTokens.String() }), r.distinct(func(p *Judged) string { return p.Facts.OutputTokens.String() })
		add("realistic load", false, "one fixed length: input "+strings.Join(in, "; ")+"; output "+strings.Join(out, "; "))
	case shown:
		for _, l := range []string{"input", "output"} {
			vals := r.distinct(func(p *Judged) string {
				if l == "input" {
					return p.Facts.InputTokens.String()
				}
				return p.Facts.OutputTokens.String()
			})
			ds = append(ds, l+" "+strings.Join(vals, "; "))
		}
		add("realistic load", true, "token lengths vary: "+strings.Join(ds, "; "))
	default:
		add("realistic load", false, "the files record no token-length percentiles to show a distribution")
	}

	add("a declared SLO", true, fmt.Sprintf("%q: %s, a fixed percentile and threshold per objective", r.SLO.Name, objectivesText(r.SLO)))

	if r.KneeReached {
		for i := r.Knee + 1; i < len(r.Points); i++ {
			if p := &r.Points[i]; !p.Met && !p.NoLoad {
				add("extended past the knee", true, fmt.Sprintf("round %d (%s) missed the SLO", p.Round, LoadText(&p.Point)))
				break
			}
		}
	} else {
		add("extended past the knee", false, "no round above the best one missed the SLO")
	}

	add("goodput, not throughput", true, r.Describe())

	if r.ClosedLoop() {
		add("open-loop arrivals", false, "a closed loop only: its tail and plateau are the harness', not the server's")
	} else {
		arr := r.distinct(func(p *Judged) string { return p.Facts.Arrival })
		ev := strings.Join(arr, "; ")
		if len(arr) == 0 {
			ev = "requests sent at a rate the tool set (the arrival process is not recorded)"
		}
		add("open-loop arrivals", true, ev)
	}

	eps := r.distinct(func(p *Judged) string { return p.Facts.Endpoint })
	if len(eps) == 0 {
		add("the client's place", false, "the files do not record the endpoint, so not where the client ran")
	} else {
		var where []string
		for _, e := range eps {
			host := e
			if u, err := url.Parse(strings.Split(e, ",")[0]); err == nil && u.Hostname() != "" {
				host = u.Hostname()
			}
			switch host {
			case "localhost", "127.0.0.1", "::1", "0.0.0.0":
				where = append(where, e+" (the same host: no network between client and server)")
			default:
				where = append(where, e+" (over the network; its latency is in every figure)")
			}
		}
		add("the client's place", true, strings.Join(where, "; "))
	}

	vers := r.distinct(func(p *Judged) string { return p.Version })
	models := r.distinct(func(p *Judged) string { return p.Facts.Model })
	versioned := len(vers) > 0
	for _, v := range vers {
		versioned = versioned && hasDigit.MatchString(v)
	}
	switch {
	case versioned && len(models) > 0:
		add("versioned output with its metadata", true, strings.Join(vers, "; ")+", model "+strings.Join(models, "; "))
	case !versioned:
		add("versioned output with its metadata", false, "the tool's version is not recorded ("+strings.Join(vers, "; ")+")")
	default:
		add("versioned output with its metadata", false, "the model is not recorded")
	}

	energy := 0
	for _, p := range r.Points {
		if p.EnergyJoules > 0 {
			energy++
		}
	}
	if energy > 0 {
		add("energy measured alongside", true, fmt.Sprintf("GPU energy over %d of %d rounds' windows", energy, len(r.Points)))
	} else {
		add("energy measured alongside", false, "no GPU energy for any round")
	}
	return out
}

// writeAudit prints the checklist and its verdict.
func (r *Result) writeAudit(w io.Writer) {
	lines := r.Audit()
	failed := 0
	fmt.Fprintln(w, "audit of the sweep:")
	for _, l := range lines {
		mark := "[x]"
		if !l.Pass {
			mark = "[ ]"
			failed++
		}
		fmt.Fprintf(w, "  %s %s: %s\n", mark, l.Check, l.Evidence)
	}
	if failed == 0 {
		fmt.Fprintln(w, "every line holds: this sweep is a capacity measurement")
	} else {
		fmt.Fprintf(w, "%d of %d lines fail: this sweep is an anecdote, not a capacity\n", failed, len(lines))
	}
}
