package accuracy

import (
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// standingConfig is issue 37's standing overload on the simulator: an
// engine of max_num_seqs 10 whose steps slow down to 3 times at a full
// batch (llm-d-inference-sim's --time-factor-under-load 3), chat traffic
// at 0.7 req/s, about half of what the full, slowed batch serves (1.3
// req/s), then surge times that from clients that cap their requests in
// flight at 300 and never time out: the queue fills (in about 40 s at 12
// times, 2 minutes at 6) and stands at 290 behind 10 running.
func standingConfig(surge float64) sim.Config {
	cfg := sim.DefaultConfig()
	cfg.Engine.MaxNumSeqs = 10
	cfg.Engine.LoadSlowdown = 3
	cfg.Workload.ClientTimeout = 0
	cfg.Workload.MaxInFlight = 300
	cfg.Workload.Classes[0].Rate = 0.7
	cfg.Levers.SurgeFactor = surge
	return cfg
}

// The standing overload read in every format through the daemon's
// adapters: 31 minutes healthy, then 10 of the capped surge. In each,
// queue_growth is raised once, within two windows of the onset, and stays
// raised to the end (one page); nothing else is raised, before or after.
// Before the standing queue counted, the queue that fills in 40 s was
// named in none of the formats: the growth at the ceiling matched for
// less than queue_sustain, then the queue stood flat. (Whether it did
// depends on the batch the window held before the onset: with the onset
// at 6 minutes instead of 31 it was named. The run is short enough for
// the race detector as it is: about 30 s.)
func TestStandingOverloadEveryFormat(t *testing.T) {
	o := HoldOptions{FailModeOptions: DefaultFailModeOptions(), Healthy: 31 * time.Minute, Hold: 10 * time.Minute}
	var runs []HoldRun
	for _, surge := range []float64{6, 12} {
		rs, err := runScript(standingConfig(surge), sim.QueueGrowth, 1, o)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, rs...)
	}
	window := o.Settings.Window
	for k, r := range runs {
		surge := []float64{6, 12}[k/len(o.Formats)]
		var raises []time.Duration
		ok := r.Supported && r.Onset >= 0
		for _, c := range r.Changes {
			switch {
			case c.Mode != diagnosis.QueueGrowth || !c.Raised:
				ok = false
			default:
				raises = append(raises, c.At-r.Onset)
			}
		}
		ok = ok && len(raises) == 1 && raises[0] > 0 && raises[0] <= 2*window
		if !ok {
			t.Errorf("surge x%g, %s: onset %v, supported %v: want queue_growth raised once within %v of the onset and nothing else:\n  %s\n  %s",
				surge, r.Format, r.Onset, r.Supported, 2*window, strings.Join(changeLines(r.Changes), "\n  "), strings.Join(r.Trace[max(0, len(r.Trace)-12):], "\n  "))
			continue
		}
		t.Logf("surge x%g, %s: queue_growth raised %v after the onset", surge, r.Format, raises[0])
	}
}
