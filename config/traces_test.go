package config

import (
	"strings"
	"testing"
)

// A traces selector needs a service name, and two targets cannot claim the
// same one; each error names its line.
func TestTracesValidation(t *testing.T) {
	good := `
targets:
  - name: a
    url: http://10.0.0.1:8000/metrics
    traces: { service_name: vllm-a, model: llama }
`
	cfg, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if tr := cfg.Targets[0].Traces; tr == nil || tr.ServiceName != "vllm-a" || tr.Model != "llama" {
		t.Fatalf("traces: %+v", tr)
	}
	bad := `
targets:
  - name: a
    url: http://10.0.0.1:8000/metrics
    traces:
      service_name: vllm
  - name: b
    url: http://10.0.0.2:8000/metrics
    traces:
      service_name: vllm
  - name: c
    url: http://10.0.0.3:8000/metrics
    traces:
      model: x
`
	_, err = Parse([]byte(bad))
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		`line 10: targets[1].traces.service_name: "vllm" is already the service name of targets[0]`,
		`line 13: targets[2].traces.service_name: is required when traces is set`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("missing %q in:\n%v", w, err)
		}
	}
}
