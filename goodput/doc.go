// Package goodput turns consecutive engine-neutral snapshots of one target
// into SLO attainment and goodput. It holds the SLO types and their
// validation, the resolution of each objective to a histogram of a model,
// the reset-aware Tracker that accumulates per-objective and joint goodput
// counters, the field's planning formulas (goodput, cost per million good
// tokens, replicas, knee), bucket advice for thresholds that are not bucket
// bounds, and the offline report behind `slo-report`.
//
// Everything here is pure: snapshots and SLOs in, numbers out. No HTTP, no
// Prometheus registry, no configuration files, no logging.
package goodput
