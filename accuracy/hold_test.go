package accuracy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// The delays the hold test allows, in windows of the classifier (1m by
// default):
//
//   - raiseWithin: from the onset to the raise, as the confusion matrix
//     allows: a window of evidence and `enter` judgements (1m35s at most
//     was measured, seeds 1 to 5);
//   - clearWithin: from the lever's end to the clear: a window for the
//     lever's evidence to leave the window and `leave` judgements (1m10s
//     at most was measured, decode_saturation), with a window to spare.
const (
	raiseWithin = 2
	clearWithin = 3
)

// TestFailModesHold: each lever held 15 simulated minutes after a
// healthy history longer than the baseline (so that the baseline holds
// healthy traffic only), then healthy again. Its mode is raised within
// raiseWithin windows of the onset, stays raised until the lever ends,
// and clears within clearWithin windows after; no other mode is raised
// at any time. Healthy traffic at the same offered load over the same
// timeline raises nothing. The onset and the end are read from the
// simulator's own lever (sim.Engine.Lever at each scrape), not from the
// options.
func TestFailModesHold(t *testing.T) {
	o := DefaultHoldOptions()
	if raceEnabled && *seedsFlag == 0 {
		// Ten times slower under the race detector (CI): the vLLM
		// format only, a 5-minute baseline after 6 healthy minutes,
		// each lever held 10 minutes and 4 healthy after (about 80 s
		// here). The full run goes without -race.
		o.Formats = []sim.Format{sim.FormatVLLM}
		o.Settings.Baseline = 5 * time.Minute
		o.Healthy, o.Hold, o.After = 6*time.Minute, 10*time.Minute, 4*time.Minute
	}
	if o.Healthy < o.Settings.Baseline+o.Settings.Window {
		t.Fatalf("healthy history %v shorter than the baseline %v and a window", o.Healthy, o.Settings.Baseline)
	}
	o.Seeds = flagSeeds(o.Seeds)
	o.Formats = flagFormats(t, o.Formats)
	win := o.Settings.Window
	for _, l := range flagLevers(t) {
		var runs []HoldRun
		for _, seed := range o.Seeds {
			rs, err := RunHold(l, seed, o)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, rs...)
		}
		for _, r := range runs {
			if msg := checkHold(r, o, win); msg != "" {
				t.Errorf("%s / %s / seed %d: %s\n  every raise and clear:\n  %s\n  signals per minute:\n  %s", r.Format, l, r.Seed, msg,
					strings.Join(changeLines(r.Changes), "\n  "), strings.Join(r.Trace, "\n  "))
				continue
			}
			t.Log(holdLine(r))
		}
	}
}

// checkHold says what is wrong with one run, "" if nothing.
func checkHold(r HoldRun, o HoldOptions, win time.Duration) string {
	if r.Lever == sim.Healthy {
		if len(r.Changes) > 0 {
			return fmt.Sprintf("healthy traffic raised %s", r.Changes[0])
		}
		return ""
	}
	mode, _ := diagnosis.ParseMode(string(r.Lever))
	// The simulator's timeline: the lever from the scrape that saw it
	// first to the first one that did not.
	if r.Onset != o.Healthy || r.End != o.Healthy+o.Hold {
		return fmt.Sprintf("the simulator held the lever from %v to %v, want %v to %v", r.Onset, r.End, o.Healthy, o.Healthy+o.Hold)
	}
	if !r.Supported {
		// What a format cannot judge it must say so (the matrix checks
		// which); what it raises instead is not judged here.
		return ""
	}
	var raised, cleared time.Duration = -1, -1
	for _, c := range r.Changes {
		switch {
		case c.Mode != mode:
			return fmt.Sprintf("another mode: %s", c)
		case c.Raised && raised < 0:
			raised = c.At
		case c.Raised:
			return fmt.Sprintf("raised again after clearing: %s", c)
		case !c.Raised && cleared < 0:
			cleared = c.At
		}
	}
	switch {
	case raised < 0:
		return "never raised"
	case raised < r.Onset:
		return fmt.Sprintf("raised at %v, before the onset %v", raised, r.Onset)
	case raised > r.Onset+raiseWithin*win:
		return fmt.Sprintf("raised %v after the onset, want within %v", raised-r.Onset, raiseWithin*win)
	case cleared < 0:
		return fmt.Sprintf("still raised %v after the lever ended, want cleared within %v", o.After, clearWithin*win)
	case cleared < r.End:
		return fmt.Sprintf("cleared at %v, %v before the lever ended", cleared, r.End-cleared)
	case cleared > r.End+clearWithin*win:
		return fmt.Sprintf("cleared %v after the lever ended, want within %v", cleared-r.End, clearWithin*win)
	}
	return ""
}

func changeLines(cs []Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

// holdLine is one row of the docs' table: lever, format, raised and
// cleared relative to the onset and the end.
func holdLine(r HoldRun) string {
	if r.Lever == sim.Healthy {
		return fmt.Sprintf("| healthy | %s | %d | nothing raised | | |", r.Format, r.Seed)
	}
	if !r.Supported {
		return fmt.Sprintf("| %s | %s | %d | unsupported | | |", r.Lever, r.Format, r.Seed)
	}
	var raised, cleared time.Duration
	for _, c := range r.Changes {
		if c.Raised {
			raised = c.At - r.Onset
		} else {
			cleared = c.At - r.End
		}
	}
	return fmt.Sprintf("| %s | %s | %d | held %v | +%v | +%v |", r.Lever, r.Format, r.Seed, r.End-r.Onset, raised, cleared)
}
