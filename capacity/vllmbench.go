package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// vLLM's serving benchmark result (`vllm bench serve --save-result`, and
// benchmarks/benchmark_serving.py --save-result before it): one run per
// file. Checked against vllm-project/vllm's vllm/benchmarks/serve.py and
// benchmark_serving.py (result_json: request_rate is the number given or
// the string "inf", burstiness, max_concurrency, then the run's metrics),
// and against real results of benchmark_serving.py (2025) and vllm bench
// serve 0.25.1 (testdata/real/vllm):
//
//   - output_throughput is total_output_tokens / duration over the
//     successful requests; completed counts them, request_throughput is
//     the achieved rate;
//   - aggregate percentiles are {mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms;
//   - with --save-detailed, per-request ttfts (s), itls (s, each gap),
//     output_lens and errors ("" for a success), one entry per request.
//
// `vllm bench serve` writes endpoint_type; the older script does not.

func parseVLLMBench(body []byte) ([]Point, error) {
	top, err := obj(body)
	if err != nil {
		return nil, fmt.Errorf("vllm bench serve result: %w", err)
	}
	version := "benchmark_serving.py result"
	if top["endpoint_type"] != nil {
		version = "vllm bench serve result"
	}
	p, err := vllmPoint(top)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", version, err)
	}
	p.Version = version
	if err := checkPoint(&p, version); err != nil {
		return nil, err
	}
	return []Point{p}, nil
}

func vllmPoint(top map[string]json.RawMessage) (Point, error) {
	p := Point{Kind: LoadRate}
	thr, ok, err := number(top["output_throughput"])
	if err != nil || !ok {
		return p, errors.New("output_throughput: missing or not a number")
	}
	p.Throughput = thr
	achieved, hasAchieved, err := number(top["request_throughput"])
	if err != nil {
		return p, fmt.Errorf("request_throughput: %w", err)
	}
	if d, ok, err := number(top["duration"]); err != nil {
		return p, fmt.Errorf("duration: %w", err)
	} else if ok {
		p.Duration = d
	}
	if n, ok, err := count(top["completed"]); err != nil {
		return p, fmt.Errorf("completed: %w", err)
	} else if ok {
		p.Counted, p.CountKnown = n, true
	}
	conc, hasConc, err := number(top["max_concurrency"])
	if err != nil {
		return p, fmt.Errorf("max_concurrency: %w", err)
	}

	// request_rate is a number, or "inf": every request at once.
	var rateStr string
	rate, hasRate, err := number(top["request_rate"])
	if err != nil {
		if json.Unmarshal(top["request_rate"], &rateStr) != nil {
			return p, fmt.Errorf("request_rate: %w", err)
		}
		if rate, err = strconv.ParseFloat(rateStr, 64); err != nil {
			return p, fmt.Errorf("request_rate: %q is not a rate", rateStr)
		}
		hasRate = true
	}
	_, ramped := top["ramp_up_strategy"]
	switch {
	case ramped && !isNull(top["ramp_up_strategy"]):
		// the rate moved during the run: no one offered rate
		p.Strategy = "ramp-up"
		p.Rate = achieved
	case hasRate && finite(rate) && rate > 0:
		p.Rate, p.RateSet = rate, true
		if hasConc {
			p.Concurrency = conc
		}
	case hasConc && conc > 0:
		p.Kind, p.Concurrency, p.Rate = LoadConcurrency, conc, achieved
	case hasRate && math.IsInf(rate, 1):
		p.MaxThroughput, p.Rate = true, achieved
	default:
		p.Rate = achieved
	}
	if p.Kind == LoadRate && !p.RateSet && !hasAchieved {
		return p, errors.New("request_throughput: missing, and request_rate sets no rate")
	}

	for key, v := range top {
		kind, pct, ok := vllmPctKey(key)
		if !ok {
			continue
		}
		f, ok, err := number(v)
		if err != nil {
			return p, fmt.Errorf("%s: %w", key, err)
		}
		if ok {
			p.setPct(kind, pct, f/1000)
		}
	}

	var d struct {
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		OutputLens []float64   `json:"output_lens"`
		Errors     []string    `json:"errors"`
	}
	for _, f := range []struct {
		key string
		dst any
	}{{"ttfts", &d.TTFTs}, {"itls", &d.ITLs}, {"output_lens", &d.OutputLens}, {"errors", &d.Errors}} {
		if raw := top[f.key]; !isNull(raw) {
			if err := json.Unmarshal(raw, f.dst); err != nil {
				return p, fmt.Errorf("%s: not a list of the expected shape", f.key)
			}
		}
	}
	if n := len(d.TTFTs); n > 0 {
		if len(d.OutputLens) != n || (len(d.ITLs) != 0 && len(d.ITLs) != n) || (len(d.Errors) != 0 && len(d.Errors) != n) {
			return p, fmt.Errorf("per-request arrays differ in length: ttfts %d, output_lens %d, itls %d, errors %d",
				n, len(d.OutputLens), len(d.ITLs), len(d.Errors))
		}
		p.Requests = make([]Request, n)
		for i := range n {
			q := Request{TTFT: d.TTFTs[i], TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN(), OutputTokens: d.OutputLens[i]}
			if len(d.Errors) > 0 && d.Errors[i] != "" {
				q.Failed = true
				q.OutputTokens = 0
			}
			if len(d.ITLs) > 0 && len(d.ITLs[i]) > 0 {
				var sum float64
				for _, x := range d.ITLs[i] {
					sum += x
				}
				q.ITL = sum / float64(len(d.ITLs[i]))
				q.TPOT = q.ITL // vLLM's TPOT is the mean gap after the first token
				q.E2E = q.TTFT + sum
			}
			p.Requests[i] = q
		}
	}
	return p, nil
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
