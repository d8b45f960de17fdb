package collector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// llama-server's Process-Start-Time-Unix header is its start in
// microseconds of the monotonic clock since boot, a token naming the
// process. Real b11669 bodies (testdata/restart, with their provenance):
// the old process later in its life (light-load with every counter
// doubled: 27,558 prompt and 28,416 generation tokens), then a new one
// under load (light-load as captured: 13,779 and 14,208), then that new
// one again.
//
// A node up for 20 minutes gives tokens such as 1200000000 and 1500000000,
// which read as Unix seconds fall in 2008 and 2017: before the previous
// scrape, so the restart was filed as "another engine process" and its
// 14,208 tokens only set a baseline. Read as tokens, a changed token with
// every counter down is a restart: those 14,208 tokens are the increase.
// The observed token (3899513466, a node up 65 minutes) reads as a Unix
// time in 2093 and is a token by plausibility alone.
func TestLlamaCppStartTokenRestart(t *testing.T) {
	light, err := os.ReadFile("testdata/restart/llamacpp-b11669-0.7.0-debian-light-load.prom")
	if err != nil {
		t.Fatal(err)
	}
	older := testbody.Advance(light, 1)
	for _, c := range []struct{ name, old, fresh string }{
		{"short uptime", "1200000000", "1500000000"},
		{"observed token", "3899513466", "3960120334"},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps := []struct {
				token string
				body  []byte
			}{{c.old, older}, {c.old, older}, {c.fresh, light}, {c.fresh, light}}
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				st := steps[min(int(n.Add(1))-1, len(steps)-1)]
				w.Header().Set("Process-Start-Time-Unix", st.token)
				w.Write(st.body)
			}))
			defer srv.Close()
			sc := newTestScraper(t, srv.URL, "", time.Second, 1<<20)
			for i := range steps {
				snap, res, err := sc.Scrape(context.Background())
				if err != nil {
					t.Fatalf("scrape %d: %v", i, err)
				}
				if !snap.ProcessToken {
					t.Errorf("scrape %d: the header's value taken for Unix seconds", i)
				}
				gen := snap.Model(snap.Models[0].Name).Counters[snapshot.GenerationTokens]
				switch i {
				case 0:
					if gen.V != 28416 {
						t.Fatalf("the old process's generation tokens %v, want 28416", gen)
					}
				case 1, 3:
					if snap.Restarted || snap.Baseline || !snap.NoReset {
						t.Errorf("scrape %d, same token: restarted=%v baseline=%v noReset=%v (%q %q)", i, snap.Restarted, snap.Baseline, snap.NoReset, res.Restart, res.Baseline)
					}
				case 2:
					if !snap.Restarted || !strings.Contains(res.Restart, "process token "+c.fresh) || !strings.Contains(res.Restart, "every counter went down") {
						t.Errorf("the new token with every counter down: restarted=%v restart=%q baseline=%q", snap.Restarted, res.Restart, res.Baseline)
					}
					if gen.V != 14208 {
						t.Errorf("the new process's generation tokens %v, want 14208 (all of them the increase)", gen)
					}
				}
			}
		})
	}
}

// Judge's answer for each pair of witnesses, the start time and the
// counters, for one step from a previous scrape at T with generation
// tokens at 1,000.
func TestTwoWitnesses(t *testing.T) {
	const T = 1_700_000_000
	cases := []struct {
		name          string
		start         float64 // of the previous snapshot
		token         bool
		curStart      float64
		gen           float64
		want          string // "", restart, baseline, flip
		wantNoReset   bool
		reasonContain string
	}{
		{"same start, counters up", T - 100, false, T - 100, 1040, "", true, ""},
		{"same start, every counter down by a tenth", T - 100, false, T - 100, 900, "", true, ""},
		{"same start, every counter down to nothing", T - 100, false, T - 100, 3, "", true, ""},
		{"start 0.99 s later, counters up", T - 100, false, T - 99.01, 1040, "", true, ""},
		{"start 1.8 s earlier, counters down", T - 100, false, T - 101.8, 900, "", true, ""},
		{"start after the previous scrape, counters down", T - 100, false, T + 3, 30, "restart", false, "every counter went down"},
		{"start after the previous scrape, counters up", T - 100, false, T + 3, 1040, "baseline", false, "did not fall"},
		{"start before the previous scrape", T - 100, false, T - 50, 30, "baseline", false, "before the previous scrape"},
		{"token unchanged, counters down", 1200000000, true, 1200000000, 30, "", true, ""},
		{"token changed by 1 µs, counters down", 1200000000, true, 1200000001, 30, "restart", false, "process token 1200000001"},
		{"token changed, counters up", 1200000000, true, 1500000000, 1040, "baseline", false, "did not fall"},
		{"no start time, every counter down to a tenth", 0, false, 0, 100, "restart", false, "every counter went down"},
		{"no start time, every counter down by a tenth", 0, false, 0, 900, "", true, ""},
	}
	for _, c := range cases {
		var cont Continuity
		prev := snapAt(t, T, c.start, 1000)
		prev.ProcessToken = c.token
		cont.Judge(nil, prev)
		cur := snapAt(t, T+5, c.curStart, c.gen)
		cur.ProcessToken = c.token
		v := cont.Judge(prev, cur)
		got, why := "", ""
		switch {
		case v.Flip != nil:
			got, why = "flip", v.Flip.Error()
		case v.Restart != "":
			got, why = "restart", v.Restart
		case v.Baseline != "":
			got, why = "baseline", v.Baseline
		}
		if got != c.want || !strings.Contains(why, c.reasonContain) || cur.NoReset != c.wantNoReset {
			t.Errorf("%s: %q %q noReset=%v, want %q containing %q, noReset=%v", c.name, got, why, cur.NoReset, c.want, c.reasonContain, c.wantNoReset)
		}
	}
}

// Start times that wobble by up to a second over 40 scrapes are one
// process: never a flip, a restart or a baseline.
func TestStartTimeWobbleIsOneProcess(t *testing.T) {
	const T = 1_700_000_000
	wobble := []float64{0, 0.99, 0.41, 0.02, 0.87, -0.05}
	var c Continuity
	var prev *snapshot.Snapshot
	for i := range 40 {
		cur := snapAt(t, T+1000+int64(i)*5, T+wobble[i%len(wobble)], float64(1000+40*i))
		v := c.Judge(prev, cur)
		if v.Flip != nil || v.Restart != "" || v.Baseline != "" {
			t.Fatalf("scrape %d: %+v", i, v)
		}
		if i > 0 && !cur.NoReset {
			t.Errorf("scrape %d: not known to be the same process", i)
		}
		prev = cur
	}
}

// Without a start time, counters that all fall by less than a fresh start
// explains and come back once are a glitch (a rank missing from one
// scrape); coming back a second time within altWindow scrapes is an
// address alternating between two processes.
func TestAlternationWithoutStartTime(t *testing.T) {
	var c Continuity
	judge := func(prev, cur *snapshot.Snapshot) string { return verdictWord(c.Judge(prev, cur)) }
	seq := []struct {
		gen  float64
		want string
	}{
		{500_000, ""}, {480_010, ""}, {500_020, ""}, // one dip and back: a glitch
		{500_030, ""}, {500_040, ""},
		{480_050, ""}, {500_060, "flip"}, // the second return within 20 scrapes
	}
	var prev *snapshot.Snapshot
	for i, s := range seq {
		cur := snapAt(t, int64(i)*5, 0, s.gen)
		if got := judge(prev, cur); got != s.want {
			t.Errorf("scrape %d (%g): %q, want %q", i, s.gen, got, s.want)
		}
		prev = cur
	}
}
