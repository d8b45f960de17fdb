package exporter

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/exporter/history"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The status page at "/": server-rendered HTML whose assets are embedded
// in the binary. The tables and the charts (inline SVG) need no
// JavaScript; status.js only refreshes the content in place, and a
// <noscript> meta refresh does it without.

//go:embed status
var statusFS embed.FS

var statusTmpl = template.Must(template.ParseFS(statusFS, "status/page.html"))

// staticFS is what /static/ serves: the stylesheet and the script.
var staticFS, _ = fs.Sub(statusFS, "status")

// RunbookBase is where the status page links a raised failure mode: the
// mode's section of docs/failure-modes.md (its anchor is the mode's name).
const RunbookBase = "https://github.com/goodput-exporter/goodput-exporter/blob/main/docs/failure-modes.md#"

// LeverSwitch lets the status page switch a simulated engine's failure
// lever. Only the demo sets one (Options.Levers); without it the page
// shows no buttons and /-/lever does not exist.
type LeverSwitch interface {
	// Levers returns the lever in force on the target and every lever
	// there is; ok is false when the target has none.
	Levers(target string) (current string, all []string, ok bool)
	SetLever(target, lever string) error
}

type statusPage struct {
	Path    string
	Refresh int // seconds
	Now     string
	Notes   []Note
	Targets []statusTarget
}

type statusTarget struct {
	Name, URL, Engine, State, Age, Error string
	// Goodput says how the target's goodput is known: exact (request
	// spans, from vLLM or the measuring proxy) or bounds (histograms).
	Goodput      string
	FamilyErrors []string
	// Implausible are the series whose increase the last scrape refused.
	Implausible []string
	Models      []string
	// Verdict is "pending", "warming up", "none" or the raised modes
	// (queue_growth may be raised while the others are warming up).
	Verdict     string
	Failing     bool
	Raised      []raisedMode
	Unsupported []string // failure modes the target cannot judge, and why
	SLOs        []statusSLO
	// Unmeasurable are objectives the engine cannot measure, and why.
	Unmeasurable []string
	Charts       []statusChart
	Lever        string
	Levers       []string
}

type raisedMode struct {
	Mode, Evidence, Runbook string
}

type statusSLO struct {
	Model, SLO string
	Objectives []statusObjective
	// Goodput is the share of requests meeting every objective in the
	// last interval, as bounds; GoodRequests the good requests since the
	// daemon started, as bounds; Exact the share judged from traces.
	Goodput, GoodRequests, Exact string
}

type statusObjective struct {
	Kind, Threshold, Target, Attained, Judged string
	Below                                     bool
}

type statusChart struct {
	Name, Last, Top, Path, Span string
	W, H                        int
}

// Chart size in CSS pixels.
const chartW, chartH = 220, 44

func (e *Exporter) statusPage(w http.ResponseWriter, path string) {
	now := time.Now()
	page := statusPage{Path: path, Refresh: refreshSeconds(e.opts.Interval), Now: now.UTC().Format("2006-01-02 15:04:05 UTC"), Notes: e.statusNotes()}
	for _, t := range e.sortedTargets() {
		page.Targets = append(page.Targets, t.status(now, e.opts.Levers))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	statusTmpl.Execute(w, page)
}

// refreshSeconds is how often the page reloads itself: each collection
// cycle, between 1 and 30 seconds.
func refreshSeconds(interval time.Duration) int {
	s := int(math.Ceil(interval.Seconds()))
	return min(max(s, 1), 30)
}

// status is the target's part of the page.
func (t *target) status(now time.Time, levers LeverSwitch) statusTarget {
	v, judged := t.verdict()
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.state
	s := statusTarget{Name: t.cfg.Name, URL: t.cfg.URL, Engine: string(st.engine), State: "pending", Age: "never"}
	if s.Engine == "" {
		s.Engine = t.cfg.Engine
	}
	if st.attempted {
		s.State = "down"
		if st.up {
			s.State = "up"
		}
		s.Age = now.Sub(st.lastScrape).Round(time.Millisecond).String() + " ago"
	}
	if !st.up {
		s.Error = st.lastErr
	}
	s.FamilyErrors = st.familyErrs
	s.Implausible = st.implausible
	if st.snap != nil {
		for _, m := range st.snap.Models {
			s.Models = append(s.Models, m.Name)
		}
	}
	s.Verdict = "pending"
	if judged {
		s.Verdict, s.Raised, s.Unsupported = verdictParts(v)
		s.Failing = len(s.Raised) > 0
	}
	s.SLOs, s.Unmeasurable = t.sloStatus(st.engine)
	s.Goodput = t.goodputSource()
	if t.hist != nil {
		pts := t.hist.Points()
		span := history.Covered(pts, now)
		for i, sig := range history.Signals {
			c := statusChart{Name: sig.Name, W: chartW, H: chartH, Last: "–", Span: span.String()}
			path, last, top, ok := history.Path(pts, i, sig.Ratio, now, span, chartW, chartH)
			if ok {
				c.Path, c.Top = path, fmtValue(top, sig.Ratio)
				if !math.IsNaN(last) {
					c.Last = fmtValue(last, sig.Ratio)
				}
			}
			s.Charts = append(s.Charts, c)
		}
	}
	if levers != nil {
		if cur, all, ok := levers.Levers(t.cfg.Name); ok {
			s.Lever, s.Levers = cur, all
		}
	}
	return s
}

// verdictParts splits a judgement for the page.
func verdictParts(v diagnosis.Verdict) (verdict string, raised []raisedMode, unsupported []string) {
	var names []string
	for _, m := range diagnosis.Modes() {
		ms := v.Modes[m]
		switch {
		case ms.Raised:
			names = append(names, m.String())
			raised = append(raised, raisedMode{Mode: m.String(), Evidence: ms.Evidence, Runbook: RunbookBase + m.String()})
		case !ms.Supported:
			unsupported = append(unsupported, m.String()+" (no "+strings.Join(ms.Missing, ", ")+")")
		}
	}
	switch {
	case !v.Ready && len(names) > 0:
		// queue_growth is judged from half a window of history.
		verdict = strings.Join(names, ", ") + " (the other modes warming up: less than one window of history)"
	case !v.Ready:
		verdict = "warming up (less than one window of history)"
	case len(names) == 0:
		verdict = "none"
	default:
		verdict = strings.Join(names, ", ")
	}
	return verdict, raised, unsupported
}

// sloStatus is the goodput table of the target; t.mu is held.
func (t *target) sloStatus(engine snapshot.Engine) (slos []statusSLO, unmeasurable []string) {
	exact := map[string]goodput.ExactSLO{}
	if t.exact != nil {
		for _, m := range t.exact.Models() {
			for _, s := range m.SLOs {
				exact[m.Model+"\x00"+s.SLO] = s
			}
		}
	}
	for _, ms := range t.tracker.Models() {
		for _, ss := range ms.SLOs {
			row := statusSLO{Model: ms.Model, SLO: ss.SLO}
			for _, os := range ss.Objectives {
				r := os.Resolution
				kind := string(os.Objective.Kind)
				if !r.Supported {
					why := "this engine does not expose it"
					if engineCanMeasure(engine, os.Objective.Kind) {
						why = "not yet: the engine creates its histogram on the first request"
					}
					unmeasurable = append(unmeasurable, ms.Model+" · "+ss.SLO+" · "+kind+": "+why)
				}
				o := statusObjective{Kind: kind, Target: fmtPercent(os.Objective.Target), Attained: "–", Judged: "–"}
				if os.Objective.Kind.Latency() {
					o.Threshold = "≤ " + strconv.FormatFloat(os.Objective.Threshold*1000, 'f', -1, 64) + " ms"
				} else {
					o.Threshold = "no error"
					if os.Objective.IncludeAbort {
						o.Threshold = "no error or abort"
					}
				}
				// A tpot fallback judges tokens, counted apart from the
				// requests (goodput.ObjectiveState.Tokens).
				judged, unit := os.Total, " requests"
				if os.Objective.Kind == goodput.KindITL {
					unit = " tokens"
				}
				if r.Fallback {
					judged, unit = os.Tokens, " tokens"
				}
				if n := judged.Judged; n > 0 {
					share := judged.Good / n
					o.Attained = fmtPercent(share)
					o.Below = share < os.Objective.Target
					o.Judged = strconv.FormatFloat(math.Round(n), 'f', -1, 64) + unit
				}
				if !r.Supported {
					o.Attained = "cannot be measured"
				}
				row.Objectives = append(row.Objectives, o)
			}
			j := ss.Joint
			switch {
			case !j.Supported:
				row.Goodput = "not measurable: an objective is not"
			case j.Interval.OK:
				row.Goodput = fmtBounds(j.Interval.Attainment.Lower, j.Interval.Attainment.Upper) + " of requests"
			default:
				row.Goodput = "no requests in the last interval"
			}
			if j.Supported && j.RequestsSource != "" {
				lo, hi := j.Total.Requests.Lower, j.Total.Requests.Upper
				row.GoodRequests = strconv.FormatFloat(math.Floor(lo), 'f', -1, 64) + "–" + strconv.FormatFloat(math.Ceil(hi), 'f', -1, 64)
			}
			if x, ok := exact[ms.Model+"\x00"+ss.SLO]; ok && x.Supported && x.Exact.Requests > 0 {
				row.Exact = t.exactBeside(ms.Model, ss.SLO, x)
			}
			if kind := perToken(ss.Objectives); kind != "" && j.Supported && j.Interval.OK && j.Interval.Attainment.Lower == 0 {
				where := "exact goodput: the measuring proxy, docs/proxy.md"
				if row.Exact != "" {
					where = "exact goodput from request spans beside it"
				}
				row.Goodput += " (no lower bound: " + strings.ToUpper(kind) + " judged per token; " + where + ")"
			}
			slos = append(slos, row)
		}
	}
	return slos, unmeasurable
}

// perToken names the first objective of the SLO judged per token (a
// tpot fallback on the inter-token histogram, or itl), which leaves the
// joint goodput no per-request lower bound; "" when there is none.
func perToken(objs []goodput.ObjectiveState) string {
	for _, os := range objs {
		if os.Resolution.Fallback || os.Objective.Kind == goodput.KindITL {
			return string(os.Objective.Kind)
		}
	}
	return ""
}

// exactBeside is the status page's exact goodput of a model and SLO,
// over the same requests as the bounds beside it: the self-check's last
// comparison (llm_goodput_exact_within_bounds), its figures and its
// verdict, so that the page and the gauge say the same. Before the
// self-check has its readings, the exact share alone, said to be over
// every traced request.
func (t *target) exactBeside(model, slo string, x goodput.ExactSLO) string {
	b := t.bounds[model+"\x00"+slo]
	if b == nil || b.verdict < 0 {
		return fmtPercent(x.Exact.GoodRequests/x.Exact.Requests) + " of " + strconv.FormatFloat(x.Exact.Requests, 'f', -1, 64) +
			" traced requests (bounds over the same requests after 10 s of traces)"
	}
	c := b.last
	verdict := "within them"
	if b.verdict == 0 {
		verdict = "OUTSIDE them (llm_goodput_exact_within_bounds 0)"
	}
	n := func(v float64) string { return strconv.FormatFloat(math.Round(v), 'f', -1, 64) }
	return n(c.got) + " good requests traced since " + c.since.UTC().Format(time.TimeOnly) + " UTC; bounds over the same requests " +
		n(math.Max(0, c.lower)) + "–" + n(c.upper) + " (widened by " + n(c.lowerEdge) + " and " + n(c.upperEdge) +
		" requests in flight at the edges, spans up to 10 s late): " + verdict
}

// goodputSource says whether the target's goodput is exact: request
// spans are configured for it (traces:), it is behind the measuring proxy
// (proxied:, or the goodput-exporter.io/proxy annotation), or spans have
// come for it. Caller holds t.mu.
func (t *target) goodputSource() string {
	switch {
	case t.cfg.Proxied:
		return "exact: each request judged from the measuring proxy's spans (bound=\"exact\"); bounds too"
	case t.cfg.Traces != nil, t.exact != nil && len(t.exact.Models()) > 0:
		return "exact: each request judged from its request span (bound=\"exact\"); bounds too"
	}
	return "bounds: from the engine's histograms only; the measuring proxy makes it exact (docs/proxy.md)"
}

func fmtPercent(v float64) string {
	return strconv.FormatFloat(math.Floor(v*1000)/10, 'f', 1, 64) + " %"
}

// fmtBounds shows bounds as percentages; one figure when they meet.
func fmtBounds(lo, hi float64) string {
	if fmtPercent(lo) == fmtPercent(hi) {
		return fmtPercent(lo)
	}
	return fmtPercent(lo) + " – " + fmtPercent(hi)
}

func fmtValue(v float64, ratio bool) string {
	if ratio {
		return strconv.FormatFloat(v*100, 'f', 0, 64) + " %"
	}
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// leverHandler serves POST /-/lever (the demo only): target and lever
// from a form, then back to the page.
func (e *Exporter) leverHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "use POST to switch a lever", http.StatusMethodNotAllowed)
		return
	}
	if why := e.refuseWrite(r); why != "" {
		http.Error(w, "cross-site lever switch refused: "+why, http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if err := e.opts.Levers.SetLever(r.PostForm.Get("target"), r.PostForm.Get("lever")); err != nil {
		http.Error(w, fmt.Sprintf("lever not switched: %v", err), http.StatusBadRequest)
		return
	}
	// Relative, so that it holds behind a proxy that adds a path prefix.
	w.Header().Set("Location", "../")
	w.WriteHeader(http.StatusSeeOther)
}
