package capacity

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// The HTML report: one self-contained page (no script, no external
// resource) with, per sweep, goodput and throughput against load, each
// latency objective's percentile against its threshold, the knee and the
// safe capacity marked, and the table. The charts are inline SVG drawn
// on linear axes from 0; an uncapped (max throughput) round is drawn one
// step past the highest set load, on a tick labelled "max".

const (
	chartW, chartH         = 640.0, 300.0
	marginL, marginR       = 70.0, 20.0
	marginT, marginB       = 20.0, 45.0
	plotW                  = chartW - marginL - marginR
	plotH                  = chartH - marginT - marginB
	maxStepPastHighestLoad = 1.15
)

type axis struct{ max float64 }

func (a axis) x(v float64) float64 { return marginL + plotW*v/a.max }
func (a axis) y(v float64) float64 { return marginT + plotH*(1-v/a.max) }

// niceMax is the smallest 1, 2 or 5 × 10ⁿ at or above v (1 for v <= 0).
func niceMax(v float64) float64 {
	if !(v > 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v*(1-1e-12) {
			return m * e
		}
	}
	return 10 * e
}

type tick struct {
	Pos   float64
	Label string
}

type mark struct {
	X, Y  float64
	Round int
	Class string
	Title string
}

type series struct {
	Class  string
	Points string // polyline points
	Marks  []mark
}

type chart struct {
	ID, Title, YLabel, XLabel string
	XTicks, YTicks            []tick
	Series                    []series
	// Knee and Safe are vertical marks (X < 0: none); Threshold a
	// horizontal one (Y < 0: none).
	KneeX, KneeY, SafeX, ThresholdY float64
	KneeLabel, SafeLabel            string
	ThresholdLabel                  string
}

type htmlRow struct {
	Round                                   int
	Load, Pct, Throughput, Goodput, Verdict string
	Knee, Safe                              bool
}

type htmlSweep struct {
	ID, Title, Describe string
	Knee, Safe          string
	Notes               []string
	Charts              []chart
	PctHeads            []string
	Rows                []htmlRow
	Audit               []AuditLine
	Facts, Missing      []string
}

// xOf places a round on the load axis: its load, or one step past the
// highest set load for max throughput.
func xOf(p *Point, highest float64) float64 {
	if p.MaxThroughput && p.Kind == LoadRate {
		return highest * maxStepPastHighestLoad
	}
	return p.Load()
}

// objectivePct is the round's percentile of an objective: the file's
// (or, for pooled repeats, the pooled requests'), else computed from its
// per-request data.
func objectivePct(j *Judged, o goodput.Objective) (float64, bool) {
	pct := math.Round(o.Target*1000) / 10
	if v, ok := j.Percentile(o.Kind, pct); ok {
		return v, true
	}
	if j.Requests == nil {
		return 0, false
	}
	var v []float64
	for _, r := range j.Requests {
		if x := latencyOf(r, o.Kind); !r.Failed && !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	sortFloats(v)
	return quantile(v, pct/100), true
}

func buildSweep(idx int, r *Result, s Sizing, currency string) htmlSweep {
	id := fmt.Sprintf("s%d", idx)
	setting := ""
	if r.Setting != "" {
		setting = " (" + r.Setting + ")"
	}
	facts, missing := r.FactLines()
	hs := htmlSweep{ID: id, Audit: r.Audit(), Facts: facts, Missing: missing, Title: fmt.Sprintf("%s %s sweep%s, SLO %q: %s", r.Tool, r.Kind, setting, r.SLO.Name, objectivesText(r.SLO)),
		Describe: r.Describe()}
	var text strings.Builder
	_ = r.Write(&text, s, currency)
	for _, line := range strings.Split(text.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "knee") || strings.HasPrefix(line, "no knee"):
			hs.Knee = line
		case strings.HasPrefix(line, "safe capacity"):
			hs.Safe = line
		case strings.HasPrefix(line, "round ") || strings.HasPrefix(line, "replicas") || strings.HasPrefix(line, "cost") ||
			strings.HasPrefix(line, "energy") || strings.HasPrefix(line, "no cost") || strings.HasPrefix(line, "warning") ||
			strings.HasPrefix(line, "bottleneck") || strings.HasPrefix(line, "throughput never"):
			hs.Notes = append(hs.Notes, line)
		}
	}

	highest := 0.0
	hasMax := false
	for i := range r.Points {
		p := &r.Points[i]
		if p.NoLoad {
			continue
		}
		if p.MaxThroughput && p.Kind == LoadRate {
			hasMax = true
			continue
		}
		highest = max(highest, p.Load())
	}
	if highest == 0 {
		highest = 1
	}
	xmax := highest
	if hasMax {
		xmax = highest * maxStepPastHighestLoad
	}
	xa := axis{max: xmax * 1.05}
	var xticks []tick
	for i := range r.Points {
		p := &r.Points[i]
		if p.NoLoad {
			continue
		}
		label := Sig3(p.Load())
		if p.MaxThroughput && p.Kind == LoadRate {
			label = "max"
		}
		xticks = append(xticks, tick{Pos: xa.x(xOf(&p.Point, highest)), Label: label})
	}
	xlabel := "offered rate (req/s)"
	if r.Kind == LoadConcurrency {
		xlabel = "concurrency"
	}
	kneeReal := r.KneePoint().Goodput > 0

	// goodput and throughput against load
	top := 0.0
	for _, p := range r.Points {
		top = max(top, p.Throughput, p.Goodput)
	}
	ya := axis{max: niceMax(top)}
	c := chart{ID: id + "-goodput", Title: "Goodput and throughput against load", YLabel: "output tokens/s",
		XLabel: xlabel, XTicks: xticks, KneeX: -1, SafeX: -1, ThresholdY: -1}
	for k := 0; k <= 5; k++ {
		v := ya.max * float64(k) / 5
		c.YTicks = append(c.YTicks, tick{Pos: ya.y(v), Label: Thousands(v)})
	}
	thr, good := series{Class: "throughput"}, series{Class: "goodput"}
	var tp, gp []string
	for i := range r.Points {
		p := &r.Points[i]
		if p.NoLoad {
			continue
		}
		x := xa.x(xOf(&p.Point, highest))
		tp = append(tp, fmt.Sprintf("%.2f,%.2f", x, ya.y(p.Throughput)))
		gp = append(gp, fmt.Sprintf("%.2f,%.2f", x, ya.y(p.Goodput)))
		thr.Marks = append(thr.Marks, mark{X: x, Y: ya.y(p.Throughput), Round: p.Round, Class: "throughput",
			Title: fmt.Sprintf("round %d, %s: throughput %s tok/s", p.Round, LoadText(&p.Point), Thousands(p.Throughput))})
		good.Marks = append(good.Marks, mark{X: x, Y: ya.y(p.Goodput), Round: p.Round, Class: "goodput",
			Title: fmt.Sprintf("round %d, %s: goodput %s tok/s", p.Round, LoadText(&p.Point), Thousands(p.Goodput))})
	}
	thr.Points, good.Points = strings.Join(tp, " "), strings.Join(gp, " ")
	c.Series = []series{thr, good}
	if kneeReal {
		k := r.KneePoint()
		c.KneeX, c.KneeY = xa.x(xOf(&k.Point, highest)), ya.y(k.Goodput)
		c.KneeLabel = "knee"
		if !r.KneeReached {
			c.KneeLabel = "knee not reached (lower bound)"
		}
	}
	if r.Safe >= 0 {
		c.SafeX = xa.x(xOf(&r.Points[r.Safe].Point, highest))
		c.SafeLabel = "safe capacity"
	}
	hs.Charts = append(hs.Charts, c)

	// each latency objective's percentile against its threshold
	for oi, o := range r.SLO.Objectives {
		if o.Kind == goodput.KindError {
			continue
		}
		pct := math.Round(o.Target*1000) / 10
		top := o.Threshold
		vals := map[int]float64{}
		for i := range r.Points {
			if v, ok := objectivePct(&r.Points[i], o); ok && !r.Points[i].NoLoad && !r.Points[i].Failed {
				vals[i] = v
				top = max(top, v)
			}
		}
		ya := axis{max: niceMax(top * 1000)} // in ms
		lc := chart{ID: fmt.Sprintf("%s-o%d", id, oi), Title: fmt.Sprintf("%s P%g against its threshold", strings.ToUpper(string(o.Kind)), pct),
			YLabel: "ms", XLabel: xlabel, XTicks: xticks, KneeX: -1, SafeX: -1,
			ThresholdY: ya.y(o.Threshold * 1000), ThresholdLabel: fmt.Sprintf("threshold %s ms", Sig3(o.Threshold*1000))}
		for k := 0; k <= 5; k++ {
			v := ya.max * float64(k) / 5
			lc.YTicks = append(lc.YTicks, tick{Pos: ya.y(v), Label: Sig3(v)})
		}
		s := series{Class: "latency"}
		var pts []string
		for i := range r.Points {
			v, ok := vals[i]
			if !ok {
				continue
			}
			p := &r.Points[i]
			x, y := xa.x(xOf(&p.Point, highest)), ya.y(v*1000)
			pts = append(pts, fmt.Sprintf("%.2f,%.2f", x, y))
			cls := "latency met"
			if v > o.Threshold {
				cls = "latency over"
			}
			s.Marks = append(s.Marks, mark{X: x, Y: y, Round: p.Round, Class: cls,
				Title: fmt.Sprintf("round %d, %s: %s P%g %s ms", p.Round, LoadText(&p.Point), strings.ToUpper(string(o.Kind)), pct, Sig3(v*1000))})
		}
		s.Points = strings.Join(pts, " ")
		lc.Series = []series{s}
		if kneeReal {
			lc.KneeX = xa.x(xOf(&r.KneePoint().Point, highest))
			lc.KneeLabel = "knee"
		}
		if r.Safe >= 0 {
			lc.SafeX = xa.x(xOf(&r.Points[r.Safe].Point, highest))
			lc.SafeLabel = "safe capacity"
		}
		hs.Charts = append(hs.Charts, lc)
		hs.PctHeads = append(hs.PctHeads, fmt.Sprintf("%s P%g (ms)", strings.ToUpper(string(o.Kind)), pct))
	}

	for i := range r.Points {
		p := &r.Points[i]
		verdict := p.verdict()
		var pcts []string
		for _, o := range r.SLO.Objectives {
			if o.Kind == goodput.KindError {
				continue
			}
			if v, ok := objectivePct(p, o); ok && !p.Failed {
				pcts = append(pcts, Sig3(v*1000))
			} else {
				pcts = append(pcts, "-")
			}
		}
		hs.Rows = append(hs.Rows, htmlRow{Round: p.Round, Load: loadCell(&p.Point), Pct: strings.Join(pcts, "\t"),
			Throughput: Thousands(p.Throughput), Goodput: Thousands(p.Goodput), Verdict: verdict,
			Knee: kneeReal && i == r.Knee, Safe: i == r.Safe})
	}
	return hs
}

var htmlPage = template.Must(template.New("page").Funcs(template.FuncMap{
	"cells": func(s string) []string { return strings.Split(s, "\t") },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Capacity under the SLO</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:1400px}
h2{font-size:1.1em;margin-top:2em}
.charts{display:flex;flex-wrap:wrap;gap:1em}
svg{background:#fff;border:1px solid #ddd}
svg text{font-size:11px;fill:#333}
.axis{stroke:#888}
.grid{stroke:#eee}
polyline{fill:none;stroke-width:2}
polyline.throughput{stroke:#999}
polyline.goodput{stroke:#1a7f37}
polyline.latency{stroke:#0550ae}
circle.throughput{fill:#999}
circle.goodput{fill:#1a7f37}
circle.latency.met{fill:#0550ae}
circle.latency.over{fill:#cf222e}
.knee{stroke:#cf222e;stroke-dasharray:4 3}
circle.knee{fill:none;stroke-width:2;stroke-dasharray:none}
.safe{stroke:#1a7f37;stroke-dasharray:2 2}
.threshold{stroke:#cf222e}
table{border-collapse:collapse;margin-top:1em}
td,th{border:1px solid #ddd;padding:2px 8px;text-align:right}
tr.knee td{font-weight:bold}
tr.safe td:first-child::after{content:" (safe)"}
.audit{list-style:none;padding-left:0}
.audit .fail{color:#cf222e}
</style></head><body>
<h1>Capacity under the SLO</h1>
{{range .}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p>{{.Describe}}.</p>
<ul class="facts">{{range .Facts}}<li>{{.}}</li>{{end}}{{if .Missing}}<li>not recorded in the files: {{range $i, $m := .Missing}}{{if $i}}, {{end}}{{$m}}{{end}}</li>{{end}}</ul>
<p class="verdict"><strong>{{.Knee}}</strong><br>{{.Safe}}</p>
{{if .Notes}}<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<div class="charts">
{{range .Charts}}<figure><figcaption>{{.Title}}</figcaption>
<svg id="{{.ID}}" xmlns="http://www.w3.org/2000/svg" width="640" height="300" viewBox="0 0 640 300" role="img" aria-label="{{.Title}}">
<line class="axis" x1="70" y1="255" x2="620" y2="255"/><line class="axis" x1="70" y1="20" x2="70" y2="255"/>
{{range .YTicks}}<line class="grid" x1="70" x2="620" y1="{{printf "%.2f" .Pos}}" y2="{{printf "%.2f" .Pos}}"/><text class="ytick" x="64" y="{{printf "%.2f" .Pos}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>
{{end}}{{range .XTicks}}<text class="xtick" x="{{printf "%.2f" .Pos}}" y="270" text-anchor="middle">{{.Label}}</text>
{{end}}<text x="345" y="292" text-anchor="middle">{{.XLabel}}</text>
<text x="14" y="140" transform="rotate(-90 14 140)" text-anchor="middle">{{.YLabel}}</text>
{{if ge .ThresholdY 0.0}}<line class="threshold" x1="70" x2="620" y1="{{printf "%.2f" .ThresholdY}}" y2="{{printf "%.2f" .ThresholdY}}"/><text x="616" y="{{printf "%.2f" .ThresholdY}}" dy="-4" text-anchor="end">{{.ThresholdLabel}}</text>
{{end}}{{if ge .SafeX 0.0}}<line class="safe" x1="{{printf "%.2f" .SafeX}}" x2="{{printf "%.2f" .SafeX}}" y1="20" y2="255"><title>{{.SafeLabel}}</title></line><text x="{{printf "%.2f" .SafeX}}" y="30" dx="4">{{.SafeLabel}}</text>
{{end}}{{if ge .KneeX 0.0}}<line class="knee" x1="{{printf "%.2f" .KneeX}}" x2="{{printf "%.2f" .KneeX}}" y1="20" y2="255"><title>{{.KneeLabel}}</title></line><text x="{{printf "%.2f" .KneeX}}" y="44" dx="4">{{.KneeLabel}}</text>
{{end}}{{range .Series}}<polyline class="{{.Class}}" points="{{.Points}}"/>
{{range .Marks}}<circle class="{{.Class}}" data-round="{{.Round}}" cx="{{printf "%.2f" .X}}" cy="{{printf "%.2f" .Y}}" r="4"><title>{{.Title}}</title></circle>
{{end}}{{end}}{{if and (ge .KneeX 0.0) (gt .KneeY 0.0)}}<circle class="knee" id="{{.ID}}-knee" cx="{{printf "%.2f" .KneeX}}" cy="{{printf "%.2f" .KneeY}}" r="9"/>
{{end}}</svg></figure>
{{end}}</div>
<table><thead><tr><th>round</th><th>load</th>{{range .PctHeads}}<th>{{.}}</th>{{end}}<th>throughput (tok/s)</th><th>goodput (tok/s)</th><th>SLO</th></tr></thead><tbody>
{{range .Rows}}<tr class="{{if .Knee}}knee {{end}}{{if .Safe}}safe{{end}}" data-round="{{.Round}}"><td>{{.Round}}</td><td>{{.Load}}</td>{{range cells .Pct}}{{if .}}<td>{{.}}</td>{{end}}{{end}}<td>{{.Throughput}}</td><td>{{.Goodput}}</td><td class="verdict">{{.Verdict}}</td></tr>
{{end}}</tbody></table>
<h3>Audit</h3><ul class="audit">{{range .Audit}}<li class="{{if .Pass}}pass{{else}}fail{{end}}">{{if .Pass}}&#x2713;{{else}}&#x2717;{{end}} {{.Check}}: {{.Evidence}}</li>{{end}}</ul>
</section>
{{end}}</body></html>
`))

// WriteHTML writes the judged sweeps as one self-contained HTML page.
func WriteHTML(w io.Writer, results []*Result, sizings []Sizing, currency string) error {
	var sweeps []htmlSweep
	for i, r := range results {
		sweeps = append(sweeps, buildSweep(i, r, sizings[i], currency))
	}
	return htmlPage.Execute(w, sweeps)
}
