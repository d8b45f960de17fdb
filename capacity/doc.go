// Package capacity finds the knee under an SLO: the load at which goodput
// (the output tokens of the requests that meet every objective) is highest,
// past which more load buys less good work. It reads the result files of
// load generators as they write them (GuideLLM, AIPerf, GenAI-Perf, vLLM's
// and SGLang's serving benchmarks; each reader says which versions it was
// checked against), judges each load against an SLO (repeats at one load
// combined, a failed round a missed one), a rate sweep, a concurrency sweep
// and each setting apart, sizes replicas and prices a million good tokens at
// the knee, compares two sweeps as a regression gate, draws the sweep as an
// HTML page, and estimates the knee from live traffic (Live) for the
// daemon's llm_capacity_* series.
package capacity
