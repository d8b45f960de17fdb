package config

import "fmt"

// Traces says which OTLP request traces belong to a target (see the otlp
// package): spans whose resource attribute service.name is ServiceName
// (vLLM sets it from OTEL_SERVICE_NAME). Model, when set, is the model
// label of every span of the target, overriding the span's own
// gen_ai.response.model (vLLM V0 puts the model path there, which may
// differ from the served name its /metrics carry); when unset, the span's
// model is used, else the one model the target's /metrics report.
type Traces struct {
	ServiceName string `yaml:"service_name"`
	Model       string `yaml:"model"`
}

// validateTraces checks each target's traces selector: a service name is
// required, and two targets may not claim the same one (a span would then
// belong to either).
func (c *Config) validateTraces(loc locator, add func(line int, path, format string, args ...any)) {
	seen := map[string]int{}
	for i := range c.Targets {
		tr := c.Targets[i].Traces
		if tr == nil {
			continue
		}
		p := fmt.Sprintf("targets[%d].traces.service_name", i)
		line := loc.line("targets", i, "traces", "service_name")
		if tr.ServiceName == "" {
			add(loc.line("targets", i, "traces"), p, "is required when traces is set")
			continue
		}
		if j, dup := seen[tr.ServiceName]; dup {
			add(line, p, "%q is already the service name of targets[%d]: its spans would match both", tr.ServiceName, j)
			continue
		}
		seen[tr.ServiceName] = i
	}
}
