package exporter

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/config"
)

var variableLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)

// A static label may take any name but those the daemon sets: every
// variable label of a target's series must be in config.ReservedLabels,
// or a static label of that name would break the target's series.
func TestReservedLabelsCoverEveryVariableLabel(t *testing.T) {
	cl := prometheus.Labels{"target": "t"}
	sd := newSLODescs(cl)
	descs := append(collector.NewDescs("t", nil).All(),
		sd.supported, sd.requests, sd.good, sd.interpolated, sd.aborted, sd.goodReq, sd.goodTok,
		newCostDesc(cl), thresholdDesc, targetDesc)
	dd := newDiagDescs(cl)
	descs = append(append(descs, dd.mode, dd.supported), dd.signals...)
	checked := 0
	for _, d := range descs {
		m := variableLabels.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the labels of %s", d)
		}
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l == "" {
				continue
			}
			checked++
			if !slices.Contains(config.ReservedLabels, l) {
				t.Errorf("%s has variable label %q, which config.ReservedLabels lacks", d, l)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d labels checked", checked)
	}
}

// Even a label set the validation did not catch costs one invalid series,
// not the whole target: Collect must not panic.
func TestBadLabelSetIsOneInvalidMetric(t *testing.T) {
	d := collector.NewDescs("t", map[string]string{"engine": "shadowed"})
	m := collector.Metric(d.Up, prometheus.GaugeValue, 1, "vllm")
	if err := m.Write(nil); err == nil {
		t.Fatal("a clashing label set must give an invalid metric")
	}
}
