// Command gen writes the constructed sweep fixtures of capacity/testdata/constructed
// from the worked example's table (see ../PROVENANCE.md). Run from the
// repository root: go run ./capacity/testdata/gen
package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// row is one round of the worked example: rate req/s, TTFT P99 ms, ITL
// P50 ms, throughput and goodput in output tok/s, and (AIPerf only) the
// GPU's mean power in W.
type row struct {
	rate, ttftP99, itlP50, thr, good, watts float64
}

// The worked example's ten rounds; 2, 4 and 8 are filled in between their
// neighbours, the others are the table's.
var example = []row{
	{2, 95, 19, 480, 480, 300}, {5, 110, 19, 1200, 1200, 380}, {8, 140, 20, 1900, 1900, 450},
	{11, 180, 21, 2500, 2500, 520}, {14, 240, 22, 3100, 3060, 600}, {17, 460, 24, 3400, 3330, 700},
	{20, 760, 31, 3700, 2520, 720}, {23, 1100, 38, 3850, 1700, 730}, {26, 1500, 48, 3950, 900, 740},
	{30, 2400, 71, 4000, 380, 750},
}

const duration = 10.0 // seconds per round

type req struct {
	ttft, itl float64 // ms
	tokens    int
}

// requests builds a round's requests: rate×duration of them, output tokens
// adding up to throughput×duration, and those of the requests with TTFT
// over 500 ms adding up to (throughput−goodput)×duration. Where the P99 is
// under 500 ms no more than 1 % of requests may miss it.
func requests(r row) []req {
	n := int(math.Round(r.rate * duration))
	total := int(math.Round(r.thr * duration))
	goodTok := int(math.Round(r.good * duration))
	bad := 0
	if goodTok < total {
		bad = int(math.Round(float64(n) * float64(total-goodTok) / float64(total)))
		if r.ttftP99 <= 500 {
			bad = min(bad, n/100)
		}
		bad = max(bad, 1)
	}
	out := make([]req, 0, n)
	spread := func(count, tokens int, ttft func(i int) float64) {
		for i := range count {
			t := tokens / count
			if i < tokens%count {
				t++
			}
			out = append(out, req{ttft: ttft(i), itl: r.itlP50, tokens: t})
		}
	}
	goodCap := math.Min(r.ttftP99, 490)
	spread(n-bad, goodTok, func(i int) float64 {
		return math.Round(goodCap*(0.5+0.5*float64(i)/float64(max(n-bad-1, 1)))*100) / 100
	})
	spread(bad, total-goodTok, func(int) float64 { return math.Max(r.ttftP99, 510) })
	return out
}

func write(path string, v any) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		panic(err)
	}
	var b []byte
	var err error
	switch {
	case filepath.Ext(path) == ".yaml":
		b, err = yaml.Marshal(v)
	case filepath.Base(filepath.Dir(path)) != "aiperf" && filepath.Base(filepath.Dir(filepath.Dir(path))) != "aiperf":
		b, err = json.Marshal(v) // as the tools write them: compact
	default:
		b, err = json.MarshalIndent(v, "", " ")
	}
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		panic(err)
	}
}

type obj = map[string]any

func guidellm(rows []row) obj {
	var benches []any
	for i, r := range rows {
		var succ []any
		for _, q := range requests(r) {
			succ = append(succ, obj{"time_to_first_token_ms": q.ttft, "inter_token_latency_ms": q.itl,
				// GuideLLM's TPOT counts the first token
				"time_per_output_token_ms": (q.ttft + q.itl*float64(q.tokens-1)) / float64(q.tokens), "output_tokens": q.tokens,
				"request_latency": (q.ttft + q.itl*float64(q.tokens-1)) / 1000})
		}
		benches = append(benches, obj{
			"type_":    "generative_benchmark",
			"config":   obj{"run_index": i, "strategy": obj{"type_": "constant", "rate": r.rate}},
			"duration": duration,
			"metrics": obj{
				"requests_per_second":      obj{"successful": obj{"mean": r.rate}},
				"output_tokens_per_second": obj{"successful": obj{"mean": r.thr}},
				"time_to_first_token_ms":   obj{"successful": obj{"percentiles": obj{"p99": r.ttftP99}}},
				"inter_token_latency_ms":   obj{"successful": obj{"median": r.itlP50, "percentiles": obj{"p50": r.itlP50}}},
			},
			"requests": obj{"successful": succ, "errored": []any{}, "incomplete": []any{}},
		})
	}
	return obj{"benchmarks": benches}
}

func main() {
	dir := "capacity/testdata/constructed"
	write(filepath.Join(dir, "guidellm", "benchmarks.json"), guidellm(example))
	write(filepath.Join(dir, "guidellm", "benchmarks.yaml"), guidellm(example))
	regressed := append([]row(nil), example...)
	regressed[5] = row{17, 620, 27, 3400, 2600, 700} // round 6 now misses: the knee is round 5
	write(filepath.Join(dir, "guidellm", "regressed.json"), guidellm(regressed))

	for i, r := range example {
		reqs := requests(r)
		ttfts := make([]float64, len(reqs))
		lens := make([]int, len(reqs))
		errs := make([]string, len(reqs))
		var lines []byte
		for j, q := range reqs {
			ttfts[j], lens[j] = q.ttft/1000, q.tokens
			rec, _ := json.Marshal(obj{
				"metadata": obj{"session_num": j, "benchmark_phase": "profiling"},
				"metrics": obj{"time_to_first_token": obj{"value": q.ttft, "unit": "ms"},
					"inter_token_latency":    obj{"value": q.itl, "unit": "ms"},
					"output_sequence_length": obj{"value": q.tokens, "unit": "tokens"}},
				"error": nil,
			})
			lines = append(append(lines, rec...), '\n')
		}
		write(filepath.Join(dir, "vllm", fmt.Sprintf("round%02d.json", i+1)), obj{
			"backend": "vllm", "model_id": "example", "request_rate": r.rate, "duration": duration,
			"completed": len(reqs), "request_throughput": r.rate, "output_throughput": r.thr,
			"p99_ttft_ms": r.ttftP99, "median_itl_ms": r.itlP50,
			"ttfts": ttfts, "output_lens": lens, "errors": errs,
		})
		run := filepath.Join(dir, "aiperf", fmt.Sprintf("round%02d", i+1))
		write(filepath.Join(run, "profile_export_aiperf.json"), obj{
			"request_throughput":      obj{"unit": "requests/sec", "avg": r.rate},
			"output_token_throughput": obj{"unit": "tokens/sec", "avg": r.thr},
			"time_to_first_token":     obj{"unit": "ms", "p99": r.ttftP99},
			"inter_token_latency":     obj{"unit": "ms", "p50": r.itlP50},
			"benchmark_duration":      obj{"unit": "sec", "avg": duration},
			"input_config":            obj{"loadgen": obj{"request_rate": r.rate}},
			"telemetry_data": obj{"endpoints": obj{"localhost:9401": obj{"gpus": obj{"gpu_0": obj{
				"metrics": obj{"gpu_power_usage": obj{"unit": "W", "avg": r.watts}}}}}}},
		})
		if err := os.WriteFile(filepath.Join(run, "profile_export.jsonl"), lines, 0o644); err != nil {
			panic(err)
		}
	}
}
