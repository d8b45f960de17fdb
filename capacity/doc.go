// Package capacity finds the knee under an SLO: the load at which goodput
// (the output tokens of the requests that meet every objective) is highest,
// past which more load buys less good work. It reads the result files of
// load generators as they write them (GuideLLM, AIPerf, vLLM's serving
// benchmark; each reader says which versions it was checked against),
// judges each round against an SLO, a rate sweep and a concurrency sweep
// apart, sizes replicas and prices a million good tokens at the knee,
// compares two sweeps as a regression gate, and estimates the knee from
// live traffic (Live) for the daemon's llm_capacity_* series.
package capacity
