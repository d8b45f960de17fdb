package demo

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

// rowCells are the GOOD TOK/S bounds and the EXACT cell of a target's row
// in every frame the demo printed.
func rowCells(t *testing.T, out, target string) (frames [][3]float64, raw []string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[0] != target || !strings.Contains(f[4], "..") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.TrimPrefix(f[4], "~"), "..")
		l, err1 := strconv.ParseFloat(lo, 64)
		h, err2 := strconv.ParseFloat(hi, 64)
		x, err3 := strconv.ParseFloat(f[5], 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // "-": not enough readings yet
		}
		frames = append(frames, [3]float64{l, h, x})
		raw = append(raw, line)
	}
	return frames, raw
}

// On the demo's screen exact goodput stands beside its bounds over the
// same requests: in every frame the vLLM row's exact good-token rate lies
// within the bounds printed beside it (to the 0.1 the cells are rounded
// to). The screen once put exact good tokens counted as their spans
// arrived beside bounds counted from the scrapes, over different requests,
// and showed exact outside its own bounds in about half of the frames.
func TestDemoExactWithinItsBoundsOnScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for 30 s")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncbuf.Buffer{}
	err := Run(ctx, Options{ListenAddress: "127.0.0.1:0", EnginesListen: "127.0.0.1:0", Speed: 10, Seed: 1,
		Tour: "healthy:60s,queue_growth:90s,healthy:60s", Interval: time.Second, Refresh: 200 * time.Millisecond,
		Duration: 30 * time.Second}, out)
	if err != nil {
		t.Fatal(err)
	}
	// SGLang's good tokens have no lower bound: the screen says why and
	// where exact goodput comes from.
	if !strings.Contains(out.String(), "sglang-1: no lower bound (TPOT judged per token); EXACT: the measuring proxy's spans") {
		t.Error("the SGLang row's missing lower bound is not explained")
	}
	frames, raw := rowCells(t, out.String(), "vllm-0")
	if len(frames) < 10 {
		t.Fatalf("only %d frames with exact and bounds:\n%s", len(frames), out)
	}
	bad := 0
	for i, f := range frames {
		if f[2] < f[0]-0.05 || f[2] > f[1]+0.05 {
			bad++
			t.Errorf("exact %.1f outside its bounds %.1f..%.1f: %s", f[2], f[0], f[1], raw[i])
		}
	}
	// The daemon's self-check, quoted under the row, agrees with the
	// screen: it never reads 0 where the screen shows exact within.
	if n := strings.Count(out.String(), ": self-check 0;"); n > 0 {
		t.Errorf("the self-check read 0 in %d frames", n)
	}
	if strings.Count(out.String(), ": self-check 1;") == 0 {
		t.Error("no frame quotes the self-check")
	}
	t.Logf("%d frames, %d with exact outside its bounds; the last:\n%s", len(frames), bad, raw[len(raw)-1])
	if testing.Verbose() {
		t.Log(out.String())
	}
}
