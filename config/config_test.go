package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGoodConfig(t *testing.T) {
	cfg, err := Load("testdata/good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Targets) != 2 {
		t.Fatalf("targets: %+v", cfg.Targets)
	}
	a, l := cfg.Targets[0], cfg.Targets[1]
	if a.Engine != "vllm" || a.Labels["team"] != "search" || a.MaxBodySize != 16<<20 || a.ModelLimit != DefaultModelLimit {
		t.Errorf("target a: %+v", a)
	}
	if l.Engine != "auto" || l.Model != "lfm2.5-8b" || l.MaxBodySize != 1<<20 {
		t.Errorf("target llama: %+v", l)
	}
	if got := cfg.EffectiveTimeout(&a, time.Minute); got != 3*time.Second {
		t.Errorf("default timeout: %v", got)
	}
	if got := cfg.EffectiveTimeout(&l, time.Minute); got != time.Second {
		t.Errorf("own timeout: %v", got)
	}
}

// Each invalid-*.yml must fail with exactly the lines of its .err file.
func TestInvalidConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid-*.yml")
	if len(files) < 5 {
		t.Fatalf("only %d invalid configs", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yml") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(f)
			if err == nil {
				t.Fatal("loaded an invalid config")
			}
			if got := err.Error() + "\n"; got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestEmptyFileIsValid(t *testing.T) {
	cfg, err := Parse(nil)
	if err != nil || len(cfg.Targets) != 0 || cfg.Defaults.MaxBodySize != DefaultMaxBodySize {
		t.Fatalf("%+v %v", cfg, err)
	}
}

func TestAddTargetsRejectsDuplicates(t *testing.T) {
	cfg, _ := Parse([]byte("targets:\n  - name: a\n    url: http://127.0.0.1:1/metrics\n"))
	err := cfg.AddTargets([]Target{{Name: "a", URL: "http://127.0.0.1:2/metrics"}})
	if err == nil || !strings.Contains(err.Error(), `"a" is already used`) {
		t.Fatalf("err = %v", err)
	}
}

func TestSLOsAndPricing(t *testing.T) {
	cfg, err := Load("testdata/good-slo.yml")
	if err != nil {
		t.Fatal(err)
	}
	slos := cfg.GoodputSLOs()
	if len(slos) != 2 || len(slos[0].Objectives) != 3 || len(slos[1].Objectives) != 1 {
		t.Fatalf("slos: %+v", slos)
	}
	ttft := slos[0].Objectives[0]
	if ttft.Kind != "ttft" || ttft.Threshold != 0.5 || ttft.Target != 0.99 {
		t.Errorf("ttft: %+v", ttft)
	}
	if !slos[0].Match.Matches("x", "llama-3.1-8b") || slos[0].Match.Matches("x", "my-llama-3") {
		t.Error("model pattern must match the whole name")
	}
	if !slos[1].Match.Matches("vllm-a", "anything") || slos[1].Match.Matches("other", "anything") {
		t.Error("target match")
	}
	if slos[1].Objectives[0].Threshold != 120 {
		t.Errorf("2m = %v s", slos[1].Objectives[0].Threshold)
	}
	if p := cfg.Pricing.Goodput(); p.PerNodeHour != 88 || p.NodeGPUs != 8 || cfg.Pricing.Currency != "EUR" {
		t.Errorf("pricing %+v", p)
	}
	if got := cfg.Targets[0].GPUs; len(got) != 2 {
		t.Errorf("gpus %v", got)
	}
}

func TestDiagnosisSection(t *testing.T) {
	cfg, err := Load("testdata/good-diagnosis.yml")
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.DiagnosisSettings()
	if s.Window != 2*time.Minute || s.Baseline != time.Hour || s.Enter != 3 || s.Leave != 5 {
		t.Errorf("settings %+v", s)
	}
	th := s.Thresholds
	if th.KVHigh != 0.95 || th.QueueSlope != 0.5 || th.DecodeLatency != 0.08 {
		t.Errorf("overrides: kv_high %v queue_slope %v decode_latency %v", th.KVHigh, th.QueueSlope, th.DecodeLatency)
	}
	// Untouched thresholds keep their defaults (worked in diagnosis).
	if th.PreemptionRate != 0.05 || th.TTFTLatency != 0.5 {
		t.Errorf("defaults lost: preemption_rate %v ttft_latency %v", th.PreemptionRate, th.TTFTLatency)
	}
	// No section: the defaults (1m, 30m, 2, 3).
	empty, _ := Parse(nil)
	if d := empty.DiagnosisSettings(); d.Window != time.Minute || d.Baseline != 30*time.Minute || d.Enter != 2 || d.Leave != 3 {
		t.Errorf("defaults %+v", d)
	}
}

func TestDiagnosisUnknownThreshold(t *testing.T) {
	_, err := Load("testdata/bad-diagnosis-key.yml")
	if err == nil || !strings.Contains(err.Error(), "line 4") || !strings.Contains(err.Error(), `unknown diagnosis threshold "kv_full"`) {
		t.Fatalf("err = %v, want the unknown key on line 4", err)
	}
}
