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

func TestDurations(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2.5s", 2500 * time.Millisecond, true},
		{"0.5s", 500 * time.Millisecond, true},
		{"1.5m", 90 * time.Second, true},
		{"100ms", 100 * time.Millisecond, true},
		{"7.5s", 7500 * time.Millisecond, true},
		{"1m30s", 90 * time.Second, true},
		{"1d", 24 * time.Hour, true}, // Prometheus' units still read
		{"0", 0, true},
		{"5", 0, false},
		{"2,5s", 0, false},
		{"1e3s", 0, false},
		{"NaN", 0, false},
		{"", 0, false},
		{"s", 0, false},
		{"99999999999h", 0, false}, // overflows
	} {
		got, err := ParseDuration(c.in)
		if (err == nil) != c.ok || time.Duration(got) != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, ok %v", c.in, time.Duration(got), err, c.want, c.ok)
		}
	}
}

// Decimal durations wherever the file takes one: thresholds on the 2.5 s
// and 7.5 s bounds of vLLM's buckets, timeouts under a second.
func TestDecimalDurationsInTheFile(t *testing.T) {
	cfg, err := Parse([]byte(`defaults:
  timeout: 1.5s
targets:
  - name: a
    url: http://127.0.0.1:8000/metrics
    timeout: 0.5s
  - name: b
    url: http://127.0.0.1:8001/metrics
slos:
  - name: chat
    objectives:
      ttft: { threshold: 2.5s, target: 0.99 }
      e2e: { threshold: 7.5s, target: 0.9 }
      queue: { threshold: 0.25m, target: 0.9 }
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.EffectiveTimeout(&cfg.Targets[0], time.Minute); got != 500*time.Millisecond {
		t.Errorf("target timeout %v, want 500ms", got)
	}
	if got := cfg.EffectiveTimeout(&cfg.Targets[1], time.Minute); got != 1500*time.Millisecond {
		t.Errorf("default timeout %v, want 1.5s", got)
	}
	obj := cfg.GoodputSLOs()[0].Objectives
	if len(obj) != 3 || obj[0].Threshold != 2.5 || obj[1].Threshold != 7.5 || obj[2].Threshold != 15 {
		t.Errorf("thresholds %+v, want 2.5, 7.5 and 15 s", obj)
	}
}

// A decoding problem (here a negative duration, which decodes, and a bad
// one, which does not) does not hide the others, nor add a second error
// about the zero it leaves on its own line.
func TestEveryErrorInOneRun(t *testing.T) {
	_, err := Parse([]byte(`defaults:
  timeout: -1s
targets:
  - name: a
    url: http://127.0.0.1:8000/metrics
    timeout: soon
  - name: a
    url: ftp://x
`))
	want := `line 2: defaults.timeout: must be positive
line 6: "soon" is not a duration (use 500ms, 2.5s, 1m)
line 7: targets[1].name: "a" is already used by targets[0]
line 8: targets[1].url: "ftp://x" must start with http:// or https://`
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
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
	if th.KVHigh != 0.95 || th.QueueSlope != 0.5 || th.DecodeLatency != 0.08 || th.QueueBatchShare != 0.3 || th.QueueSustain != 60 || th.QueueStandingBatches != 2 || th.QueuePauseWaits != 3 {
		t.Errorf("overrides: kv_high %v queue_slope %v decode_latency %v queue_batch_share %v queue_sustain %v queue_standing_batches %v queue_pause_waits %v",
			th.KVHigh, th.QueueSlope, th.DecodeLatency, th.QueueBatchShare, th.QueueSustain, th.QueueStandingBatches, th.QueuePauseWaits)
	}
	// Untouched thresholds keep their defaults (worked in diagnosis).
	if th.PreemptionRate != 0.05 || th.TTFTLatency != 0.5 || th.StallSilence != 30 {
		t.Errorf("defaults lost: preemption_rate %v ttft_latency %v stall_silence %v", th.PreemptionRate, th.TTFTLatency, th.StallSilence)
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
