package accuracy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goodput-exporter/goodput-exporter/capacity"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// RampOptions describe a live knee run: the simulated engine under a slow
// diurnal ramp, read every Interval through the vLLM adapter and the
// goodput tracker into the live knee estimator, as the daemon does.
type RampOptions struct {
	Base     sim.Config
	Ramp     sim.Ramp
	Duration time.Duration // virtual time to run
	Interval time.Duration // scrape cadence; 0 means 5 s
	SLO      goodput.SLO
	Live     capacity.LiveOptions
	// Every is how often the estimate is recorded; 0 means a minute.
	Every time.Duration
}

// RampPoint is the live estimate at one moment of the ramp.
type RampPoint struct {
	At   time.Duration
	Rate float64 // offered load the ramp set, req/s
	// OK is false before the estimator has any level with enough windows.
	OK       bool
	Estimate capacity.Estimate
}

// RunRamp runs the ramp and records the live estimate every Every.
func RunRamp(ctx context.Context, o RampOptions) ([]RampPoint, error) {
	if err := o.Ramp.Validate(); err != nil {
		return nil, err
	}
	if o.Duration <= 0 || len(o.SLO.Objectives) == 0 {
		return nil, errors.New("accuracy: a ramp needs a duration and an SLO")
	}
	every, record := o.Interval, o.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	if record <= 0 {
		record = time.Minute
	}
	e, err := sim.New(o.Base)
	if err != nil {
		return nil, err
	}
	scrape, err := vllmScraper(e)
	if err != nil {
		return nil, err
	}
	tr := goodput.NewTracker("sim", []goodput.SLO{o.SLO})
	obs := capacity.NewObserver(o.Live)
	rate := o.Ramp.RateAt(0)
	if err := e.SetRate(rate); err != nil {
		return nil, err
	}
	prev, err := scrape()
	if err != nil {
		return nil, err
	}
	if err := tr.Update(prev); err != nil {
		return nil, err
	}
	var out []RampPoint
	for t := every; t <= o.Duration; t += every {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e.AdvanceTo(t)
		cur, err := scrape()
		if err != nil {
			return nil, err
		}
		if err := tr.Update(cur); err != nil {
			return nil, err
		}
		obs.Observe(tr, prev, cur)
		prev = cur
		if t%record == 0 {
			p := RampPoint{At: t, Rate: rate}
			if est := obs.Estimates(); len(est) == 1 {
				p.OK, p.Estimate = true, est[0].Estimate
			}
			out = append(out, p)
		}
		// the clients' rate for the next interval
		if r := o.Ramp.RateAt(t); r != rate {
			rate = r
			if err := e.SetRate(rate); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// WriteRampTable prints the recorded estimates, one line each.
func WriteRampTable(w io.Writer, pts []RampPoint) error {
	if _, err := fmt.Fprintln(w, "| time | offered (req/s) | estimate | knee (req/s) | knee goodput (tok/s) | headroom | levels |\n|---|---|---|---|---|---|---|"); err != nil {
		return err
	}
	for _, p := range pts {
		if !p.OK {
			fmt.Fprintf(w, "| %v | %.1f | none yet | | | | |\n", p.At, p.Rate)
			continue
		}
		label := "lower bound"
		if p.Estimate.Reached {
			label = "knee"
		}
		if _, err := fmt.Fprintf(w, "| %v | %.1f | %s | %.1f | %.0f | %.2f | %d |\n", p.At, p.Rate, label,
			p.Estimate.KneeLoad, p.Estimate.KneeGoodput, p.Estimate.Headroom, p.Estimate.Levels); err != nil {
			return err
		}
	}
	return nil
}
