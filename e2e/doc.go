// Package e2e holds the end-to-end suite: two daemons (the built binary),
// each scraping its own farm of simulated engines and a simulated
// dcgm-exporter, Debian's prometheus evaluating every shipped rule file,
// rendered by the mixin package with compressed time, and
// prometheus-alertmanager routing to a webhook inside the test. It checks
// that healthy engines raise no alert, that each failure lever pages with
// its own failure-mode alert and resolves, that an overload fires the
// page-level burn-rate alert, that a stopped daemon fires its absence
// alert, that an engine restart leaves no recorded rate negative and no
// counter decreasing, and that every dashboard panel's query returns
// data. Everything binds 127.0.0.1. docs/e2e.md says how to run it.
//
// The package has no code of its own outside its tests.
package e2e
