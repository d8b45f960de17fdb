package config

import (
	"strings"
	"testing"
)

// The hold thresholds are read like every other: kv_hold a ratio,
// monopoly_kv_hold a factor over 1; the defaults (0.8, 1.5) otherwise.
func TestDiagnosisHoldThresholds(t *testing.T) {
	cfg, err := Parse([]byte("diagnosis:\n  thresholds:\n    kv_hold: 0.85\n    monopoly_kv_hold: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if th := cfg.DiagnosisSettings().Thresholds; th.KVHold != 0.85 || th.MonopolyKVHold != 2 {
		t.Errorf("kv_hold %v monopoly_kv_hold %v, want 0.85 and 2", th.KVHold, th.MonopolyKVHold)
	}
	empty, _ := Parse(nil)
	if th := empty.DiagnosisSettings().Thresholds; th.KVHold != 0.8 || th.MonopolyKVHold != 1.5 {
		t.Errorf("defaults: kv_hold %v monopoly_kv_hold %v, want 0.8 and 1.5", th.KVHold, th.MonopolyKVHold)
	}
	for _, bad := range []string{"kv_hold: 1.5", "kv_hold: 0", "monopoly_kv_hold: 0.5", "monopoly_kv_hold: 1"} {
		if _, err := Parse([]byte("diagnosis:\n  thresholds:\n    " + bad + "\n")); err == nil || !strings.Contains(err.Error(), strings.Split(bad, ":")[0]) {
			t.Errorf("%s: err = %v, want it refused", bad, err)
		}
	}
}
