package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// DefaultEnergySelector is DCGM's energy counter: total energy since the
// driver loaded, in millijoules, one series per GPU.
const DefaultEnergySelector = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"

// EnergyQuery reads each round's GPU energy from Prometheus: the
// selector's counters (millijoules, one series a GPU; select the GPUs
// that served the sweep) over exactly the round's window.
type EnergyQuery struct {
	URL      string
	Selector string // a series selector of energy counters in mJ
	Timeout  time.Duration
}

// roundEnergy is a round's energy from the counters, or why there is none.
// A series is used when it was scraped across the whole window: a sample
// no further before the window's start nor after its end than the largest
// gap between its samples inside. Each series' average power is its
// counter's increase (Prometheus reset semantics) over the time between
// its first and last sample in the window; the round's energy is the sum
// of their powers times the window.
func roundEnergy(m model.Matrix, start, end time.Time) (joules float64, gpus int, note string) {
	window := end.Sub(start).Seconds()
	for _, s := range m {
		var in []model.SamplePair
		for _, v := range s.Values {
			t := v.Timestamp.Time()
			if !t.Before(start) && !t.After(end) {
				in = append(in, v)
			}
		}
		if len(in) < 2 {
			return 0, 0, fmt.Sprintf("the series %s has fewer than two samples in the window", s.Metric)
		}
		gap := 0.0
		for i := 1; i < len(in); i++ {
			gap = max(gap, in[i].Timestamp.Time().Sub(in[i-1].Timestamp.Time()).Seconds())
		}
		first, last := in[0].Timestamp.Time(), in[len(in)-1].Timestamp.Time()
		if first.Sub(start).Seconds() > gap || end.Sub(last).Seconds() > gap {
			return 0, 0, fmt.Sprintf("the series %s does not cover the window (samples from %s to %s)", s.Metric,
				first.Format(time.RFC3339), last.Format(time.RFC3339))
		}
		var inc float64
		for i := 1; i < len(in); i++ {
			d := float64(in[i].Value - in[i-1].Value)
			if d < 0 {
				d = float64(in[i].Value) // a reset: the counter restarted from 0
			}
			inc += d
		}
		span := last.Sub(first).Seconds()
		if !(span > 0) || math.IsNaN(inc) {
			return 0, 0, fmt.Sprintf("the series %s has no usable samples in the window", s.Metric)
		}
		joules += inc / 1000 / span * window
		gpus++
	}
	if gpus == 0 {
		return 0, 0, "no series of the selector has samples in the window"
	}
	return joules, gpus, ""
}

// Attach sets each round's EnergyJoules from Prometheus over its window,
// replacing the file's own; a round without an absolute window, or whose
// window the series do not cover, gets an EnergyNote instead, and no
// energy. An unreachable Prometheus is an error.
func (q EnergyQuery) Attach(ctx context.Context, sw *Sweep) error {
	client, err := api.NewClient(api.Config{Address: q.URL})
	if err != nil {
		return fmt.Errorf("--prometheus.url: %w", err)
	}
	sel := q.Selector
	if sel == "" {
		sel = DefaultEnergySelector
	}
	if strings.ContainsAny(sel, "[]()") {
		return errors.New("--prometheus.selector is a series selector (name{labels}), not an expression")
	}
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	v1 := promv1.NewAPI(client)
	for i := range sw.Points {
		p := &sw.Points[i]
		p.EnergyJoules = 0
		if p.Start.IsZero() || !p.End.After(p.Start) {
			p.EnergyNote = "the file records no absolute window for the round, so its energy cannot be aligned"
			continue
		}
		ms := p.End.Sub(p.Start).Milliseconds() + 1
		qctx, cancel := context.WithTimeout(ctx, timeout)
		v, _, _, err := v1.Query(qctx, fmt.Sprintf("%s[%dms]", sel, ms), p.End)
		cancel()
		if err != nil {
			return fmt.Errorf("Prometheus at %s: %w", q.URL, err)
		}
		m, ok := v.(model.Matrix)
		if !ok {
			return fmt.Errorf("Prometheus at %s: %s is not a range of samples", q.URL, sel)
		}
		slices.SortFunc(m, func(a, b *model.SampleStream) int { return strings.Compare(a.Metric.String(), b.Metric.String()) })
		j, _, note := roundEnergy(m, p.Start, p.End)
		p.EnergyJoules, p.EnergyNote = j, note
	}
	return nil
}

// writeEnergy prints each round's average power and joules per good token,
// or why it has none, where any round has energy or a note.
func (r *Result) writeEnergy(w io.Writer) error {
	any := false
	for _, p := range r.Points {
		any = any || p.EnergyJoules > 0 || p.EnergyNote != ""
	}
	if !any {
		return nil
	}
	fmt.Fprintln(w, "\nGPU energy per round, over the round's window:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "round\twindow (s)\tenergy (J)\tmean power (W)\tJ per good token\t")
	for _, p := range r.Points {
		if p.EnergyJoules <= 0 {
			note := p.EnergyNote
			if note == "" {
				note = "no energy"
			}
			fmt.Fprintf(tw, "%d\t%s\t-\t-\t%s\t\n", p.Round, Sig3(p.Duration), note)
			continue
		}
		perTok := "-"
		if good := p.Goodput * p.Duration; good > 0 {
			perTok = fmt.Sprintf("%.3f", p.EnergyJoules/good)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t\n", p.Round, Sig3(p.Duration), Sig3(p.EnergyJoules), Sig3(p.EnergyJoules/p.Duration), perTok)
	}
	return tw.Flush()
}
