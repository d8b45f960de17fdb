// Package demo is what `goodput-exporter demo` and `simulate` run besides
// flags: a farm of simulated engines and one dcgm-exporter-format GPU
// endpoint on loopback (farm.go), the feed that hands the daemon's OTLP
// receiver the simulated vLLM engine's request spans as vLLM would send
// them (spans.go), the daemon wired to them with the demo's SLOs and a
// classifier scaled to the simulated clock (run.go), the terminal view
// of what the daemon exports (view.go), and the simulate command's
// serving and rate sweep (simulate.go).
//
// It sits at the end of the data flow: it may import exporter, otlp, sim,
// collector, config and diagnosis; only cmd/ may import it, and no package
// the daemon runs in production may.
package demo
