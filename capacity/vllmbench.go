package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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

func parseVLLMBench(top map[string]json.RawMessage) ([]Point, error) {
	version := "benchmark_serving.py result"
	if top["endpoint_type"] != nil {
		version = "vllm bench serve result"
	}
	p, err := vllmPoint(top)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", version, err)
	}
	p.Version = version
	p.Setting = vllmSetting(top)
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
	if ramped && !isNull(top["ramp_up_strategy"]) {
		// the rate moved during the run: no one offered rate
		p.Strategy = "ramp-up"
		p.Rate = achieved
	} else {
		offered(&p, rate, hasRate, conc, hasConc, achieved)
	}
	if p.Kind == LoadRate && !p.RateSet && !hasAchieved {
		p.Rate = 0 // no load at all: a failed round, listed without one
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

	p.Facts = vllmFacts(top, &p)

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

// vllmResultKeys are the fields `vllm bench serve` writes itself (its
// result_json, the per-request lists, the speculative-decoding figures);
// a `vllm bench sweep` run (run_number) adds the parameters of its
// setting beside them, which vllmSetting reads.
var vllmResultKeys = map[string]bool{
	"date": true, "endpoint_type": true, "backend": true, "label": true, "model_id": true, "tokenizer_id": true,
	"num_prompts": true, "request_rate": true, "burstiness": true, "max_concurrency": true, "duration": true,
	"completed": true, "failed": true, "total_input_tokens": true, "total_output_tokens": true,
	"request_throughput": true, "request_goodput": true, "request_goodput:": true, "output_throughput": true,
	"total_token_throughput": true, "max_output_tokens_per_s": true, "max_concurrent_requests": true, "rtfx": true,
	"input_lens": true, "output_lens": true, "ttfts": true, "itls": true, "generated_texts": true, "errors": true,
	"start_times": true, "run_number": true, "ramp_up_strategy": true, "ramp_up_start_rps": true, "ramp_up_end_rps": true,
}

// vllmSetting names a `vllm bench sweep` run's setting: the parameters
// it records beside the result ("max_num_seqs=8"), sorted; "" for a run
// not from a sweep.
func vllmSetting(top map[string]json.RawMessage) string {
	if top["run_number"] == nil {
		return ""
	}
	var parts []string
	for k, v := range top {
		if vllmResultKeys[k] || strings.HasPrefix(k, "spec_decode") {
			continue
		}
		if _, _, ok := vllmPctKey(k); ok || strings.HasPrefix(k, "mean_") || strings.HasPrefix(k, "std_") {
			continue
		}
		parts = append(parts, k+"="+strings.TrimSpace(string(v)))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// vllmFacts reads a run's conditions: the model, what the file records of
// the stack, token counts (per request with --save-detailed, else totals
// over completed), and the arrival process (vLLM sends at Poisson
// arrivals for burstiness 1, gamma otherwise).
func vllmFacts(top map[string]json.RawMessage, p *Point) Facts {
	f := Facts{Model: firstString(top, []string{"model_id"}, []string{"model_name"})}
	var stack []string
	for _, k := range []string{"backend", "endpoint_type", "hardware", "quant-type", "kind"} {
		if v := firstString(top, []string{k}); v != "" {
			stack = append(stack, k+" "+v)
		}
	}
	f.Stack = strings.Join(stack, ", ")
	var in, out []float64
	_ = json.Unmarshal(top["input_lens"], &in)
	_ = json.Unmarshal(top["output_lens"], &out)
	n, nOK, _ := number(top["completed"])
	if f.InputTokens = listDist(in); !f.InputTokens.Known {
		t, ok, _ := number(top["total_input_tokens"])
		f.InputTokens = meanDist(t, n, ok && nOK)
	}
	if f.OutputTokens = listDist(out); !f.OutputTokens.Known {
		t, ok, _ := number(top["total_output_tokens"])
		f.OutputTokens = meanDist(t, n, ok && nOK)
	}
	if v, ok, _ := number(top["mean_e2el_ms"]); ok && v > 0 {
		f.MeanE2E = v / 1000
	}
	switch {
	case p.Kind == LoadConcurrency:
		f.Arrival = ArrivalClosed
	case p.MaxThroughput:
		f.Arrival = ArrivalAllAtOnce
	case p.RateSet:
		b, ok, _ := number(top["burstiness"])
		f.Arrival = ArrivalPoisson
		if ok && b != 1 {
			f.Arrival = fmt.Sprintf("gamma (burstiness %g)", b)
		}
		if p.Concurrency > 0 {
			f.Arrival += fmt.Sprintf(", at most %g in flight", p.Concurrency)
		}
	}
	return f
}

// offered sets p's load from what a benchmark's result file says it
// offered: a finite request rate (with the concurrency cap beside it, if
// any), else a concurrency (a closed loop, at the rate it achieved), else
// an infinite rate (as fast as it could: the achieved rate), else the
// achieved rate.
func offered(p *Point, rate float64, hasRate bool, conc float64, hasConc bool, achieved float64) {
	switch {
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
}
