package chart_test

import (
	"testing"

	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// helm lint, through the library: no warning or error for the defaults
// (an icon missing is only informational).
func TestHelmLint(t *testing.T) {
	l := lint.All(chartDir, nil, namespace, false)
	for _, m := range l.Messages {
		if m.Severity >= support.WarningSev {
			t.Error(m)
		} else {
			t.Log(m)
		}
	}
}
