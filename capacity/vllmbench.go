package capacity

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// vllmResult is the file `vllm bench serve --save-result` writes (vLLM
// v0.10 and later; benchmarks/benchmark_serving.py before it wrote the
// same keys): one rate per file, aggregate percentiles as
// {mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms, and with --save-detailed
// the per-request ttfts (s), itls (s, per token), output_lens and errors.
type vllmResult struct {
	RequestRate       json.RawMessage `json:"request_rate"` // a number, or "inf"
	Duration          float64         `json:"duration"`
	RequestThroughput float64         `json:"request_throughput"`
	OutputThroughput  float64         `json:"output_throughput"`
	TTFTs             []float64       `json:"ttfts"`
	ITLs              [][]float64     `json:"itls"`
	OutputLens        []float64       `json:"output_lens"`
	Errors            []string        `json:"errors"`
}

func parseVLLMBench(body []byte) ([]Point, error) {
	var r vllmResult
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("vllm bench serve result: %w", err)
	}
	p := Point{Throughput: r.OutputThroughput, Duration: r.Duration}
	rate := strings.Trim(string(r.RequestRate), `"`)
	if v, err := strconv.ParseFloat(rate, 64); err == nil && finite(v) && v > 0 {
		p.Rate = v
	} else {
		// --request-rate inf (a concurrency sweep): the achieved rate
		// stands for the offered one
		p.Rate = r.RequestThroughput
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(body, &raw) // already parsed once
	for key, v := range raw {
		kind, pct, ok := vllmPctKey(key)
		if !ok {
			continue
		}
		var f float64
		if json.Unmarshal(v, &f) == nil {
			p.setPct(kind, pct, f/1000)
		}
	}
	if n := len(r.TTFTs); n > 0 {
		if len(r.OutputLens) != n || (len(r.ITLs) != 0 && len(r.ITLs) != n) || (len(r.Errors) != 0 && len(r.Errors) != n) {
			return nil, fmt.Errorf("per-request arrays differ in length: ttfts %d, output_lens %d, itls %d, errors %d",
				n, len(r.OutputLens), len(r.ITLs), len(r.Errors))
		}
		p.Requests = make([]Request, n)
		for i := range n {
			q := Request{TTFT: r.TTFTs[i], TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN(), OutputTokens: r.OutputLens[i]}
			if len(r.Errors) > 0 && r.Errors[i] != "" {
				q.Failed = true
				q.OutputTokens = 0
			}
			if len(r.ITLs) > 0 && len(r.ITLs[i]) > 0 {
				var sum float64
				for _, x := range r.ITLs[i] {
					sum += x
				}
				q.ITL = sum / float64(len(r.ITLs[i]))
				q.TPOT = q.ITL // vLLM's TPOT is the mean gap after the first token
				q.E2E = q.TTFT + sum
			}
			p.Requests[i] = q
		}
	}
	if err := checkPoint(&p, "result"); err != nil {
		return nil, err
	}
	return []Point{p}, nil
}

// vllmPctKey reads "p99_ttft_ms" or "median_itl_ms".
func vllmPctKey(key string) (goodput.Kind, float64, bool) {
	stat, rest, ok := strings.Cut(key, "_")
	if !ok || !strings.HasSuffix(rest, "_ms") {
		return "", 0, false
	}
	var kind goodput.Kind
	switch strings.TrimSuffix(rest, "_ms") {
	case "ttft":
		kind = goodput.KindTTFT
	case "tpot":
		kind = goodput.KindTPOT
	case "itl":
		kind = goodput.KindITL
	case "e2el":
		kind = goodput.KindE2E
	default:
		return "", 0, false
	}
	if stat == "median" {
		return kind, 50, true
	}
	if !strings.HasPrefix(stat, "p") {
		return "", 0, false
	}
	pct, err := strconv.ParseFloat(stat[1:], 64)
	if err != nil || !(pct > 0 && pct < 100) {
		return "", 0, false
	}
	return kind, pct, true
}
