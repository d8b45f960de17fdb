package capacity

import (
	"bytes"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// TestBottleneck: on the worked example TTFT P99 grows 95 → 760 ms from
// round 1 to round 7 (the first round past the knee, which missed), ×8,
// while ITL P50 grows 19 → 31 ms, ×1.63: prefill. On the real SGLang
// sweep (random data set, TTFT P50 <= 100 ms and ITL P50 <= 15 ms) both
// objectives miss at 4 req/s, and ITL grew more (13.6 → 19.4 ms against
// TTFT 85.7 → 106 ms): decode. The ratios are worked here from the files'
// own fields.
func TestBottleneck(t *testing.T) {
	r1, r7 := "testdata/constructed/vllm/round01.json", "testdata/constructed/vllm/round07.json"
	res := judge(t, glob(t, "testdata/constructed/vllm/round*.json")...)
	name, why, ok := res.Bottleneck()
	gt := rawField(t, r7, "p99_ttft_ms") / rawField(t, r1, "p99_ttft_ms")
	gi := rawField(t, r7, "median_itl_ms") / rawField(t, r1, "median_itl_ms")
	if !ok || name != "prefill" || !(gt > gi) || !strings.Contains(why, "×8.00") || !strings.Contains(why, "×1.63") {
		t.Errorf("worked example: %q %q %v (TTFT ×%v, ITL ×%v)", name, why, ok, gt, gi)
	}
	sg := realDir + "sglang/h200-llama-3.3-70b-online.jsonl"
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(must(os.ReadFile(sg))), []byte("\n")) {
		var m map[string]any
		_ = json.Unmarshal(l, &m)
		lines = append(lines, m)
	}
	gt = lines[2]["median_ttft_ms"].(float64) / lines[0]["median_ttft_ms"].(float64)
	gi = lines[2]["median_itl_ms"].(float64) / lines[0]["median_itl_ms"].(float64)
	sw, err := Read(sg)
	if err != nil {
		t.Fatal(err)
	}
	slo := goodput.SLO{Name: "p50", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}, {Kind: goodput.KindITL, Threshold: 0.015, Target: 0.5}}}
	res, err = Judge(sw.Split()[0], slo)
	if err != nil {
		t.Fatal(err)
	}
	if name, why, ok := res.Bottleneck(); !ok || name != "decode" || !(gi > gt) {
		t.Errorf("SGLang: %q %q %v (TTFT ×%v, ITL ×%v)", name, why, ok, gt, gi)
	}
	// no round past the knee missed: no bottleneck is named
	if _, _, ok := judge(t, glob(t, "testdata/constructed/vllm/round0[1-6].json")...).Bottleneck(); ok {
		t.Error("a bottleneck named with the knee not reached")
	}
}

// TestDistributions: per round with per-request data, P50 to P99.9 of
// TTFT, here of the worked example's round 7, against the file's own
// ttfts sorted in the test (linear between closest ranks).
func TestDistributions(t *testing.T) {
	r7 := "testdata/constructed/vllm/round07.json"
	var f struct{ TTFTs []float64 }
	_ = json.Unmarshal(must(os.ReadFile(r7)), &f)
	sort.Float64s(f.TTFTs)
	q := func(p float64) float64 {
		h := p * float64(len(f.TTFTs)-1)
		i := int(h)
		if i+1 >= len(f.TTFTs) {
			return f.TTFTs[len(f.TTFTs)-1]
		}
		return f.TTFTs[i] + (h-float64(i))*(f.TTFTs[i+1]-f.TTFTs[i])
	}
	res := judge(t, glob(t, "testdata/constructed/vllm/round*.json")...)
	var out bytes.Buffer
	_ = res.writeDistributions(&out)
	var row string
	for _, l := range strings.Split(out.String(), "\n") {
		if fs := strings.Fields(l); len(fs) > 0 && fs[0] == "7" {
			row = l
		}
	}
	fs := strings.Fields(row)
	if len(fs) != 9 {
		t.Fatalf("row 7: %q\n%s", row, out.String())
	}
	for i, p := range distPcts {
		if want := Sig3(q(p/100) * 1000); fs[1+i] != want {
			t.Errorf("TTFT P%g: %s, the file's ttfts give %s", p, fs[1+i], want)
		}
	}
}

// chatSLOp50 is an SLO on medians, for files that hold only those.
var chatSLOp50 = goodput.SLO{Name: "p50", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.1, Target: 0.5}}}

// chatSLOp95 is the SLO of the runs against the test engine.
var chatSLOp95 = goodput.SLO{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTTFT, Threshold: 0.3, Target: 0.95}}}
