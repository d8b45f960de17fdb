// Package sim is a discrete-event model of one continuously batching LLM
// inference engine on one GPU, used to reproduce the eight failure modes on
// demand and to measure goodput accuracy against exact ground truth.
//
// What lives here:
//
//   - the model: a workload (Poisson or constant arrivals, heavy-tailed
//     prompt and output lengths, shared prefixes, closed-loop sessions), a
//     vLLM V1 style scheduler (token budget, chunked prefill, FCFS, recompute
//     preemption), a paged KV cache with a prefix cache, a roofline step-time
//     model and a GPU with power, energy, clocks, temperature and throttling;
//   - levers, one per failure mode, and scripted scenarios of lever phases;
//   - exposition of the simulated state in vLLM V1, SGLang, llama.cpp and
//     dcgm-exporter text formats;
//   - ground truth per finished request, with exact SLO attainment and
//     joint goodput over any window;
//   - a real-time Server for the CLI and a rate Sweep that shows the knee.
//
// The model runs on a virtual clock (time.Duration since start) and is
// deterministic for a seed: the same Config and the same sequence of calls
// give byte-identical output.
package sim
