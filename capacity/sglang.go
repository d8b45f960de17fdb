package capacity

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// SGLang's serving benchmark (`python -m sglang.bench_serving
// --output-file F`) appends one JSON object a run to F, so a sweep is one
// file of JSON lines. Checked against sgl-project/sglang's
// python/sglang/bench_serving.py (its result dict) and against real
// outputs (testdata/real/sglang):
//
//   - request_rate is the rate given, Python's bare Infinity for an
//     uncapped run; max_concurrency the cap, or null;
//   - output_throughput is total_output_tokens / duration over the
//     completed requests; completed counts them; request_throughput (in
//     later versions) is the achieved rate;
//   - aggregate percentiles are {median,pNN}_{ttft,tpot,itl}_ms and
//     {median,pNN}_e2e_latency_ms; older outputs hold only the medians;
//     tpot is per request, (latency - ttft) / (output tokens - 1), as in
//     vLLM, and itl's percentiles are over all gaps of all requests;
//   - dataset_name and random_{input,output}_len say what was sent: runs
//     of different data sets in one file are different sweeps.

func parseSGLang(top map[string]json.RawMessage) (Point, error) {
	p := Point{Kind: LoadRate, Version: "SGLang bench_serving"}
	fail := func(err error) (Point, error) { return p, fmt.Errorf("%s: %w", p.Version, err) }
	thr, ok, err := number(top["output_throughput"])
	if err != nil || !ok {
		return fail(fmt.Errorf("output_throughput: missing or not a number"))
	}
	p.Throughput = thr
	if d, ok, err := number(top["duration"]); err != nil {
		return fail(fmt.Errorf("duration: %w", err))
	} else if ok {
		p.Duration = d
	}
	if n, ok, err := count(top["completed"]); err != nil {
		return fail(fmt.Errorf("completed: %w", err))
	} else if ok {
		p.Counted, p.CountKnown = n, true
	}
	achieved, hasAchieved, err := number(top["request_throughput"])
	if err != nil {
		return fail(fmt.Errorf("request_throughput: %w", err))
	}
	if !hasAchieved && p.CountKnown && p.Duration > 0 {
		achieved, hasAchieved = float64(p.Counted)/p.Duration, true
	}
	rate, hasRate, err := number(top["request_rate"])
	if err != nil {
		var s string
		if json.Unmarshal(top["request_rate"], &s) != nil {
			return fail(fmt.Errorf("request_rate: %w", err))
		}
		if rate, err = strconv.ParseFloat(s, 64); err != nil {
			return fail(fmt.Errorf("request_rate: %q is not a rate", s))
		}
		hasRate = true
	}
	conc, hasConc, err := number(top["max_concurrency"])
	if err != nil {
		return fail(fmt.Errorf("max_concurrency: %w", err))
	}
	offered(&p, rate, hasRate, conc, hasConc, achieved)
	if p.Kind == LoadRate && !p.RateSet && !p.MaxThroughput && !hasAchieved {
		p.Rate = 0
	}
	for key, v := range top {
		k := strings.Replace(key, "_e2e_latency_ms", "_e2el_ms", 1)
		kind, pct, ok := vllmPctKey(k)
		if !ok {
			continue
		}
		f, ok, err := number(v)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", key, err))
		}
		if ok {
			p.setPct(kind, pct, f/1000)
		}
	}
	p.Setting = sglangSetting(top)
	p.Facts = Facts{Model: firstString(top, []string{"model_id"}, []string{"model"}), Stack: "backend " + firstString(top, []string{"backend"})}
	if n, ok, _ := number(top["completed"]); ok {
		ti, iok, _ := number(top["total_input_tokens"])
		to, ook, _ := number(top["total_output_tokens"])
		p.Facts.InputTokens, p.Facts.OutputTokens = meanDist(ti, n, iok), meanDist(to, n, ook)
	}
	if v, ok, _ := number(top["mean_e2e_latency_ms"]); ok && v > 0 {
		p.Facts.MeanE2E = v / 1000
	}
	switch {
	case p.Kind == LoadConcurrency:
		p.Facts.Arrival = ArrivalClosed
	case p.MaxThroughput:
		p.Facts.Arrival = ArrivalAllAtOnce
	case p.RateSet:
		// bench_serving draws Poisson gaps (gamma with --burstiness)
		p.Facts.Arrival = ArrivalPoisson
		if b, ok, _ := number(top["burstiness"]); ok && b != 1 {
			p.Facts.Arrival = fmt.Sprintf("gamma (burstiness %g)", b)
		}
	}
	if err := checkPoint(&p, p.Version); err != nil {
		return p, err
	}
	return p, nil
}

// sglangSetting names the data set a run sent: "random 1024/1024 tokens"
// (random input and output lengths), "sharegpt".
func sglangSetting(top map[string]json.RawMessage) string {
	var ds string
	_ = json.Unmarshal(top["dataset_name"], &ds)
	if ds == "" {
		return ""
	}
	if strings.HasPrefix(ds, "random") {
		in, _, _ := number(top["random_input_len"])
		out, _, _ := number(top["random_output_len"])
		return fmt.Sprintf("data set %s, %g/%g tokens in/out", ds, in, out)
	}
	return "data set " + ds
}
