// Package rules holds the Prometheus recording rules shipped with the
// exporter (goodput.rules.yml), the failure-mode alert
// (failure-modes.rules.yml) and their promtool unit tests (tests/);
// rules_test.go runs promtool on them as part of `go test ./...`.
package rules
