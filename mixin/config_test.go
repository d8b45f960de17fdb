package mixin

import (
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/diagnosis"
)

// The alerts, runbooks and dashboards state the classifier's hysteresis;
// the mixin's defaults must be the daemon's, or the text lies.
func TestDiagnosisDefaultsMatchTheDaemon(t *testing.T) {
	c, d := Default(), diagnosis.DefaultSettings()
	sustain := time.Duration(d.Thresholds.QueueSustain * float64(time.Second))
	if c.DiagnosisWindow != d.Window || c.DiagnosisEnter != d.Enter || c.DiagnosisLeave != d.Leave || c.DiagnosisQueueSustain != sustain {
		t.Errorf("mixin: window %v enter %d leave %d queue_sustain %v; the daemon's defaults: %v, %d, %d, %v",
			c.DiagnosisWindow, c.DiagnosisEnter, c.DiagnosisLeave, c.DiagnosisQueueSustain, d.Window, d.Enter, d.Leave, sustain)
	}
}
