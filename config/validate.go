package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Engines a target may name.
var engineNames = []string{"auto", "vllm", "sglang", "llamacpp", "tgi", "triton", "trtllm", "dynamo"}

// ReservedLabels are the label names the daemon or Prometheus set on a
// target's series; a static label must not shadow them. A test in
// exporter/ checks that every variable label of a target's series is here.
var ReservedLabels = []string{
	"target", "engine", "model", "reason", "slo", "objective", "bound",
	"source", "fallback", "currency", "basis", "le", "quantile", "instance",
	"job", "gpu", "uuid", "name", "method", "split", "namespace", "pod", "mode", "sampled",
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (c *Config) validate(loc locator) Errors {
	var errs Errors
	add := func(line int, path, format string, args ...any) {
		errs = append(errs, &Error{Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Defaults.Timeout < 0 {
		add(loc.line("defaults", "timeout"), "defaults.timeout", "must be positive")
	}
	if c.Defaults.ModelLimit < 0 {
		add(loc.line("defaults", "model_limit"), "defaults.model_limit", "must be positive")
	}
	seen := map[string]int{}
	for i := range c.Targets {
		t := &c.Targets[i]
		p := fmt.Sprintf("targets[%d]", i)
		at := func(key string) int { return loc.line("targets", i, key) }
		switch {
		case t.Name == "":
			add(at("name"), p+".name", "is required")
		default:
			if j, dup := seen[t.Name]; dup {
				add(at("name"), p+".name", "%q is already used by targets[%d]", t.Name, j)
			}
			seen[t.Name] = i
		}
		if n := len(t.Name); n > snapshot.MaxLabelValue {
			add(at("name"), p+".name", "is %d bytes, longer than the %d-byte cap on label values", n, snapshot.MaxLabelValue)
		}
		if n := len(t.Model); n > snapshot.MaxLabelValue {
			add(at("model"), p+".model", "is %d bytes, longer than the %d-byte cap on label values", n, snapshot.MaxLabelValue)
		}
		if err := checkURL(t.URL); err != nil {
			add(at("url"), p+".url", "%v", err)
		}
		if !slices.Contains(engineNames, t.Engine) {
			add(at("engine"), p+".engine", "%q is not one of %v", t.Engine, engineNames)
		}
		if t.Timeout < 0 {
			add(at("timeout"), p+".timeout", "must be positive")
		}
		if (t.Pod == "") != (t.Namespace == "") {
			add(at("pod"), p+".pod", "pod and namespace go together")
		}
		if t.ModelLimit < 0 {
			add(at("model_limit"), p+".model_limit", "must be positive")
		}
		for _, k := range sortedKeys(t.Labels) {
			switch {
			case !labelName.MatchString(k):
				add(loc.line("targets", i, "labels", k), p+".labels", "%q is not a valid label name", k)
			case slices.Contains(ReservedLabels, k) || len(k) > 1 && k[:2] == "__":
				add(loc.line("targets", i, "labels", k), p+".labels", "%q is set by the exporter or by Prometheus and cannot be a static label", k)
			case len(t.Labels[k]) > snapshot.MaxLabelValue:
				add(loc.line("targets", i, "labels", k), p+".labels", "the value of %q is %d bytes, longer than the %d-byte cap on label values", k, len(t.Labels[k]), snapshot.MaxLabelValue)
			}
		}
	}
	c.validateTraces(loc, add)
	c.compileSLOs(loc, add)
	c.validatePricing(loc, add)
	c.validateDiagnosis(loc, add)
	return errs
}

func checkURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must start with http:// or https://", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
