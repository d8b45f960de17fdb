package accuracy

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// WindowOptions describe one run of the window check: a scenario played
// on the simulator's virtual clock, read every Interval in each format,
// and, for every window between two reads of each cadence, the good
// requests of the simulator's per-request truth set beside the bounds.
type WindowOptions struct {
	Scenario sim.Scenario
	Seed     uint64
	Duration time.Duration
	Formats  []sim.Format
	// Cadences are the daemon's collection intervals checked; each must
	// be a whole multiple of the first (the simulator is read at the
	// first, and a slower cadence takes every n-th read).
	Cadences []time.Duration
	Windows  []time.Duration
	// SLOs are judged per format: each must be supported by the format
	// and judge requests (no itl, no tpot judged per token).
	SLOs map[sim.Format]goodput.SLO
}

// WindowResult is one format at one cadence over a run.
type WindowResult struct {
	Format  sim.Format
	Cadence time.Duration
	// Per window length (WindowOptions.Windows), over every window
	// starting at a read: how many, how many with the truth outside
	// [lower − edge, upper + edge] from the window's totals (the
	// definition the recording rules use), how many outside the same
	// band from the increase of the daemon's cumulative counters
	// (llm_goodput_requests_total), and how many outside the window's
	// bounds with no edge at all.
	Windows, Outside, OutsideCounters, OutsideNoEdge []int
	// OutsideFormer counts the windows whose truth lay outside the former
	// definition (per-interval bounds added up), edge included.
	OutsideFormer []int
	// Width and Edge are the mean of upper − lower and of the edge, as a
	// share of the window's true finished requests.
	Width, Edge []float64
	// The good requests' output tokens, per window length: how many
	// windows had the true good tokens outside the token bounds drawn
	// from the window's totals with the request bounds widened by the
	// edge (goodput.WindowTokenBounds), outside them with no edge, and
	// outside the increase of llm_goodput_tokens_total (each interval's
	// bounds added up); how many windows had no token bounds at all; and
	// the mean of upper − lower (edge 0) as a share of the true tokens of
	// the window's finished requests.
	TokOutside, TokOutsideNoEdge, TokOutsideSums, TokMissing []int
	TokWidth                                                 []float64
}

// reading is what the daemon knows at one read.
type reading struct {
	at     time.Duration
	w      goodput.WindowTotals
	totals goodput.Bounds // llm_goodput_requests_total
	// former is what llm_goodput_requests_total used to count: each
	// interval's requests times the Fréchet bounds of its attainments,
	// added up.
	former goodput.Bounds
	edge   float64 // running + waiting
	// sums is llm_goodput_tokens_total{bound="lower"|"upper"}.
	sums goodput.Bounds
}

// RunWindows plays the scenario and checks every window. The truth and
// the histograms come from the same simulated requests: it is a
// consistency check of the bounds' arithmetic and of what the engines'
// histograms allow, not of the engines themselves.
func RunWindows(o WindowOptions) ([]WindowResult, error) {
	if len(o.Cadences) == 0 || len(o.Formats) == 0 || o.Duration <= 0 {
		return nil, fmt.Errorf("accuracy: need formats, cadences and a duration")
	}
	step := o.Cadences[0]
	for _, c := range o.Cadences {
		if c <= 0 || c%step != 0 {
			return nil, fmt.Errorf("accuracy: cadence %v is not a multiple of %v", c, step)
		}
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = o.Seed
	cfg.Scenario = o.Scenario
	cfg.Truth.Horizon = 0 // keep every record
	// SGLang with --collect-tokens-histogram: without its output-length
	// histogram no token bounds exist to check (vLLM always has one).
	cfg.Engine.TokenHistograms = true
	e, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	type reader struct {
		format  sim.Format
		cadence time.Duration
		parser  *collector.Parser
		tr      *goodput.Tracker
		slo     goodput.SLO
		reads   []reading
	}
	var readers []*reader
	for _, f := range o.Formats {
		engine := map[sim.Format]snapshot.Engine{sim.FormatVLLM: snapshot.VLLM, sim.FormatSGLang: snapshot.SGLang, sim.FormatLlamaCPP: snapshot.LlamaCPP}[f]
		for _, c := range o.Cadences {
			p, err := collector.NewParser(engine, collector.ParseOptions{ModelLimit: 100, DefaultModel: "sim"})
			if err != nil {
				return nil, err
			}
			slo, ok := o.SLOs[f]
			if !ok {
				return nil, fmt.Errorf("accuracy: no SLO for the %s format", f)
			}
			readers = append(readers, &reader{format: f, cadence: c, parser: p, slo: slo, tr: goodput.NewTracker("sim", []goodput.SLO{slo})})
		}
	}
	start := time.Unix(int64(cfg.StartUnix), 0)
	// One read per format serves every cadence that reads at this time:
	// the trackers only read a snapshot.
	snaps := map[sim.Format]*snapshot.Snapshot{}
	var buf bytes.Buffer
	for at := step; at <= o.Duration; at += step {
		e.AdvanceTo(at)
		clear(snaps)
		for _, r := range readers {
			if at%r.cadence != 0 {
				continue
			}
			snap, ok := snaps[r.format]
			if !ok {
				buf.Reset()
				if err := e.WriteMetrics(&buf, r.format); err != nil {
					return nil, err
				}
				if snap, err = r.parser.Parse(buf.Bytes(), "", start.Add(at)); err != nil {
					return nil, fmt.Errorf("the %s adapter rejected the simulator's exposition: %w", r.format, err)
				}
				snap.Target = "sim"
				snaps[r.format] = snap
			}
			if err := r.tr.Update(snap); err != nil {
				return nil, err
			}
			rd := reading{at: at}
			if n := len(r.reads); n > 0 {
				rd.former = r.reads[n-1].former
			}
			for _, m := range snap.Models {
				rd.edge += m.Gauges[snapshot.Running].V + m.Gauges[snapshot.Waiting].V
			}
			for _, ms := range r.tr.Models() {
				for _, ss := range ms.SLOs {
					if !ss.Joint.Supported || ss.Joint.RequestsSource == "" {
						continue
					}
					rd.w, rd.totals, rd.sums = ss.Joint.Window.Clone(), ss.Joint.Total.Requests, ss.Joint.Total.Tokens
					if in := ss.Joint.Interval; in.OK {
						var ps []float64
						for _, o := range ss.Objectives {
							if p, ok := o.Interval.Attainment(); ok {
								ps = append(ps, p)
							}
						}
						f := goodput.JointBounds(ps...).Scale(in.Requests)
						rd.former.Lower += f.Lower
						rd.former.Upper += f.Upper
					}
				}
			}
			r.reads = append(r.reads, rd)
		}
	}
	// Requests finished by each read, and the good ones, from the truth.
	recs := e.Truth().Records(0, o.Duration+time.Nanosecond)
	all := make([]time.Duration, len(recs))
	allTok := make([]float64, len(recs)+1) // allTok[i]: tokens of the first i
	for i := range recs {
		all[i] = recs[i].Finish
		allTok[i+1] = allTok[i] + float64(recs[i].OutputTokens)
	}
	upTo := func(xs []time.Duration, t time.Duration) float64 {
		n, _ := slices.BinarySearch(xs, t+1) // finished at or before t
		return float64(n)
	}
	var out []WindowResult
	for _, r := range readers {
		res := WindowResult{Format: r.format, Cadence: r.cadence}
		var good []time.Duration
		goodTok := []float64{0} // goodTok[i]: tokens of the first i good
		for i := range recs {
			if meets(r.slo, &recs[i]) {
				good = append(good, recs[i].Finish)
				goodTok = append(goodTok, goodTok[len(goodTok)-1]+float64(recs[i].OutputTokens))
			}
		}
		if len(r.reads) == 0 || r.reads[len(r.reads)-1].w.Requests == 0 {
			return nil, fmt.Errorf("accuracy: the %s format judged no request against %s", r.format, r.slo.Name)
		}
		for _, w := range o.Windows {
			var n, outside, outsideC, outsideN, outsideF int
			var tokOut, tokOutN, tokOutS, tokMiss int
			var width, edge, tokWidth float64
			for i := range r.reads {
				a := &r.reads[i]
				j, found := slices.BinarySearchFunc(r.reads, a.at+w, func(x reading, t time.Duration) int { return int(x.at - t) })
				if !found {
					continue
				}
				b := &r.reads[j]
				truth := upTo(good, b.at) - upTo(good, a.at)
				finished := upTo(all, b.at) - upTo(all, a.at)
				truthTok := goodTok[int(upTo(good, b.at))] - goodTok[int(upTo(good, a.at))]
				finishedTok := allTok[int(upTo(all, b.at))] - allTok[int(upTo(all, a.at))]
				e := a.edge + b.edge
				tol := 1e-6 * max(1, finished)
				wb := goodput.WindowBounds(a.w, b.w)
				cb := goodput.Bounds{Lower: b.totals.Lower - a.totals.Lower, Upper: b.totals.Upper - a.totals.Upper}
				n++
				if truth < wb.Lower-e-tol || truth > wb.Upper+e+tol {
					outside++
				}
				if truth < cb.Lower-e-tol || truth > cb.Upper+e+tol {
					outsideC++
				}
				if truth < wb.Lower-tol || truth > wb.Upper+tol {
					outsideN++
				}
				if fb := (goodput.Bounds{Lower: b.former.Lower - a.former.Lower, Upper: b.former.Upper - a.former.Upper}); truth < fb.Lower-e-tol || truth > fb.Upper+e+tol {
					outsideF++
				}
				if finished > 0 {
					width += (wb.Upper - wb.Lower) / finished
					edge += e / finished
				}
				ttol := 1e-6 * max(1, finishedTok)
				tb, ok := goodput.WindowTokenBounds(a.w, b.w, e)
				tn, okN := goodput.WindowTokenBounds(a.w, b.w, 0)
				if !ok || !okN {
					tokMiss++
				} else {
					if truthTok < tb.Lower-ttol || truthTok > tb.Upper+ttol {
						tokOut++
					}
					if truthTok < tn.Lower-ttol || truthTok > tn.Upper+ttol {
						tokOutN++
					}
					if finishedTok > 0 {
						tokWidth += (tn.Upper - tn.Lower) / finishedTok
					}
				}
				if sb := (goodput.Bounds{Lower: b.sums.Lower - a.sums.Lower, Upper: b.sums.Upper - a.sums.Upper}); truthTok < sb.Lower-ttol || truthTok > sb.Upper+ttol {
					tokOutS++
				}
			}
			res.Windows = append(res.Windows, n)
			res.Outside = append(res.Outside, outside)
			res.OutsideCounters = append(res.OutsideCounters, outsideC)
			res.OutsideNoEdge = append(res.OutsideNoEdge, outsideN)
			res.OutsideFormer = append(res.OutsideFormer, outsideF)
			res.Width = append(res.Width, width/float64(max(n, 1)))
			res.Edge = append(res.Edge, edge/float64(max(n, 1)))
			res.TokOutside = append(res.TokOutside, tokOut)
			res.TokOutsideNoEdge = append(res.TokOutsideNoEdge, tokOutN)
			res.TokOutsideSums = append(res.TokOutsideSums, tokOutS)
			res.TokMissing = append(res.TokMissing, tokMiss)
			res.TokWidth = append(res.TokWidth, tokWidth/float64(max(n-tokMiss, 1)))
		}
		out = append(out, res)
	}
	return out, nil
}

// meets judges one finished request against every objective of the SLO,
// as judge does.
func meets(slo goodput.SLO, r *sim.Record) bool {
	t := judge(slo, []sim.Record{*r}, r.Finish, r.Finish+1)
	return t.requests == 1 && t.goodRequests == 1
}

// WindowRow is one line of the table: a scenario, a format and a cadence
// over every seed.
type WindowRow struct {
	Scenario string
	Seeds    []uint64
	WindowResult
}

// WriteWindowTable prints one line per scenario, format and cadence: per
// window length, the windows checked and how many had the truth outside
// the band.
func WriteWindowTable(w io.Writer, windows []time.Duration, rows []WindowRow) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"SCENARIO", "FORMAT", "CADENCE", "SEEDS"}
	for _, d := range windows {
		m := fmtMinutes(d)
		head = append(head, m+" WINDOWS", m+" OUTSIDE (window / counters / no edge / former)", m+" WIDTH", m+" EDGE",
			m+" TOKENS OUTSIDE (window / no edge / sums / none)", m+" TOKENS WIDTH")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		seeds := make([]string, len(r.Seeds))
		for i, s := range r.Seeds {
			seeds[i] = fmt.Sprint(s)
		}
		cells := []string{r.Scenario, string(r.Format), r.Cadence.String(), strings.Join(seeds, ",")}
		for k := range windows {
			cells = append(cells, fmt.Sprint(r.Windows[k]),
				fmt.Sprintf("%d / %d / %d / %d", r.Outside[k], r.OutsideCounters[k], r.OutsideNoEdge[k], r.OutsideFormer[k]),
				fmt.Sprintf("%.3f", r.Width[k]), fmt.Sprintf("%.3f", r.Edge[k]),
				fmt.Sprintf("%d / %d / %d / %d", r.TokOutside[k], r.TokOutsideNoEdge[k], r.TokOutsideSums[k], r.TokMissing[k]),
				fmt.Sprintf("%.3f", r.TokWidth[k]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func fmtMinutes(d time.Duration) string { return fmt.Sprintf("%gm", d.Minutes()) }

// merge adds b's counts to a (same format, cadence and windows), averaging
// the widths and edges over the windows of both.
func (a *WindowResult) merge(b WindowResult) {
	if a.Windows == nil {
		*a = b
		a.Windows = slices.Clone(b.Windows)
		a.Outside, a.OutsideCounters, a.OutsideNoEdge = slices.Clone(b.Outside), slices.Clone(b.OutsideCounters), slices.Clone(b.OutsideNoEdge)
		a.OutsideFormer = slices.Clone(b.OutsideFormer)
		a.Width, a.Edge = slices.Clone(b.Width), slices.Clone(b.Edge)
		a.TokOutside, a.TokOutsideNoEdge = slices.Clone(b.TokOutside), slices.Clone(b.TokOutsideNoEdge)
		a.TokOutsideSums, a.TokMissing, a.TokWidth = slices.Clone(b.TokOutsideSums), slices.Clone(b.TokMissing), slices.Clone(b.TokWidth)
		return
	}
	for k := range a.Windows {
		na, nb := float64(a.Windows[k]), float64(b.Windows[k])
		if na+nb > 0 {
			a.Width[k] = (a.Width[k]*na + b.Width[k]*nb) / (na + nb)
			a.Edge[k] = (a.Edge[k]*na + b.Edge[k]*nb) / (na + nb)
		}
		ta, tb := float64(a.Windows[k]-a.TokMissing[k]), float64(b.Windows[k]-b.TokMissing[k])
		if ta+tb > 0 {
			a.TokWidth[k] = (a.TokWidth[k]*ta + b.TokWidth[k]*tb) / (ta + tb)
		}
		a.TokOutside[k] += b.TokOutside[k]
		a.TokOutsideNoEdge[k] += b.TokOutsideNoEdge[k]
		a.TokOutsideSums[k] += b.TokOutsideSums[k]
		a.TokMissing[k] += b.TokMissing[k]
		a.Windows[k] += b.Windows[k]
		a.Outside[k] += b.Outside[k]
		a.OutsideCounters[k] += b.OutsideCounters[k]
		a.OutsideNoEdge[k] += b.OutsideNoEdge[k]
		a.OutsideFormer[k] += b.OutsideFormer[k]
	}
}

// MergeWindowResults adds up runs of one scenario (several seeds): one
// result per format and cadence, in the order of the first run.
func MergeWindowResults(runs [][]WindowResult) []WindowResult {
	var out []WindowResult
	for _, run := range runs {
		for _, r := range run {
			i := slices.IndexFunc(out, func(x WindowResult) bool { return x.Format == r.Format && x.Cadence == r.Cadence })
			if i < 0 {
				out = append(out, WindowResult{})
				i = len(out) - 1
			}
			out[i].merge(r)
		}
	}
	return out
}
