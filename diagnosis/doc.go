// Package diagnosis names the failure mode behind a target's goodput.
//
// It sits between goodput/ and exporter/: once per collection cycle a
// Diagnoser takes the target's engine-neutral snapshot (or the news that
// the scrape failed) and the readings of the GPUs attributed to it, keeps
// per-cycle samples, and computes the signals of the eight failure modes
// over a short trailing window and over a baseline that trails it, lagged
// by one window and fed only samples outside incidents (none from a
// window in which a mode matched, none while one is raised), so that an
// incident never becomes its own baseline:
// queue depth and its slope, the running batch and its observed ceiling,
// KV-cache usage, preemptions per second, the TTFT tail and the share of
// it spent queueing, the decode (TPOT or ITL) tail, prompt tokens per
// second and per request, the prefix-cache hit ratio, generation tokens
// per second, finished, error and abort rates, whether the target is up,
// and per GPU the SM clock ratio, power and throttle reasons (no GPU
// backend reports a temperature to the daemon yet; a throttle reason is
// what the driver makes of it).
//
// The classifier (rules.go) writes each mode as a rule over those signals
// with named thresholds (Thresholds, defaults with the reason for each),
// applies hysteresis (a mode is raised after Enter consecutive matching
// judgements of the window and cleared after Leave clean ones; a raised
// mode is judged by its rule's hold condition where it has one, the
// steady state of the same incident), resolves
// two modes matching at once by a documented precedence (Explains), and
// reports a mode whose signals the target's engine or GPU backend lacks as
// unsupported rather than as a silent "no".
//
// The package reads snapshot.Snapshot, goodput SLOs and collector/gpu
// readings; it never imports the exporter.
package diagnosis
