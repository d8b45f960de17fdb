package accuracy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/sim"
)

// TestLiveKneeOnRamp runs the chat workload under a diurnal ramp from 4 to
// 24 req/s (crest at 90 min of a 3 h period) for 2 h of virtual time,
// through the vLLM adapter, the goodput tracker and the live estimator.
// The sweep of the same engine and SLO (TestAccuracy, rates 4…28, steps
// of 2 req/s around the knee) puts the knee at 16 req/s; the live knee
// must land within one step of it, 14 to 18 req/s. While the offered load
// has not yet crossed 16 req/s the estimate must be a lower bound; once
// the load has been past 18 req/s for a while it must be a knee; and the
// headroom must follow 1 − load/knee within 0.15 (a window lags the
// load by up to a minute). Under the race detector (CI), where the
// simulator runs about ten times slower, the ramp is twice as fast, with
// 30 s windows, and stops at 36 min, past the knee.
func TestLiveKneeOnRamp(t *testing.T) {
	const sweepKnee, sweepStep = 16.0, 2.0
	o := RampOptions{
		Base:     sim.DefaultConfig(),
		Ramp:     sim.Ramp{Low: 4, High: 24, Period: 3 * time.Hour},
		Duration: 70 * time.Minute,
		SLO:      ChatSLO(),
	}
	if raceEnabled || testing.Short() {
		// A faster ramp, but the daemon's 1-minute window: a window's
		// goodput is its lower token bound drawn from its totals, which
		// leaves out the requests in flight at its edges; over 30 s of
		// chat requests lasting seconds that is loose enough to read as
		// a fall (a knee at 5.7 req/s on a ramp whose knee is 16).
		o.Ramp.Period, o.Ramp.Step, o.Duration = 90*time.Minute, 30*time.Second, 36*time.Minute
		o.Live.Window, o.Every = 60*time.Second, 30*time.Second
	}
	pts, err := RunRamp(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = WriteRampTable(&table, pts)
	t.Log("\n" + table.String())

	crossed, reached := false, false
	for _, p := range pts {
		if p.Rate >= sweepKnee {
			crossed = true
		}
		if !p.OK {
			continue
		}
		e := p.Estimate
		if !crossed && e.Reached {
			t.Errorf("%v: at %.1f req/s, before the ramp crossed the knee, the estimate is a knee (%.1f req/s)", p.At, p.Rate, e.KneeLoad)
		}
		if e.Reached {
			reached = true
			if e.KneeLoad < sweepKnee-sweepStep || e.KneeLoad > sweepKnee+sweepStep {
				t.Errorf("%v: live knee %.2f req/s, more than one sweep step from %g", p.At, e.KneeLoad, sweepKnee)
			}
			if want := 1 - p.Rate/e.KneeLoad; e.Headroom < want-0.15 || e.Headroom > want+0.15 {
				t.Errorf("%v: headroom %.3f at %.1f req/s, want about %.3f", p.At, e.Headroom, p.Rate, want)
			}
		}
	}
	if !reached {
		t.Fatal("the ramp went to 24 req/s and the estimate never became a knee")
	}
	if last := pts[len(pts)-1]; !last.OK || !last.Estimate.Reached {
		t.Fatalf("at the end of the run: %+v", last)
	}
}
