// Package config reads the daemon's YAML configuration file: the engine
// targets to scrape, their defaults, the SLOs and the pricing. Decoding is strict (an unknown key
// is an error naming its line) and every validation error carries the line
// of the key it is about.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Defaults used when neither the file nor a flag says otherwise.
const (
	DefaultMaxBodySize = 32 << 20
	DefaultModelLimit  = 100
)

// Config is the whole file.
type Config struct {
	// Defaults apply to every target that does not set its own value.
	Defaults TargetDefaults `yaml:"defaults"`
	Targets  []Target       `yaml:"targets"`
	// SLOs are matched to targets and models; see docs/slos.md.
	SLOs []SLO `yaml:"slos"`
	// Pricing turns GPU time into cost per good token; optional.
	Pricing *Pricing `yaml:"pricing"`
	// Diagnosis tunes the failure-mode classifier; optional.
	Diagnosis *Diagnosis `yaml:"diagnosis"`
}

// TargetDefaults are the per-target settings a file may set once.
type TargetDefaults struct {
	Timeout     Duration `yaml:"timeout"`
	MaxBodySize ByteSize `yaml:"max_body_size"`
	ModelLimit  int      `yaml:"model_limit"`
}

// Target is one engine /metrics endpoint.
type Target struct {
	// Name is the value of the target label on every series of this engine.
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	// Engine is auto, vllm, sglang, llamacpp, tgi, triton, trtllm or dynamo.
	Engine string `yaml:"engine"`
	// Timeout bounds one scrape; 0 means the default.
	Timeout Duration `yaml:"timeout"`
	// MaxBodySize caps the (decompressed) response body.
	MaxBodySize ByteSize `yaml:"max_body_size"`
	// Model is the model label for engines whose series carry none
	// (llama.cpp). Engines that label their series ignore it.
	Model string `yaml:"model"`
	// ModelLimit caps how many distinct models one target may report;
	// series of further models are left out and counted.
	ModelLimit int `yaml:"model_limit"`
	// Labels are added to every series of this target.
	Labels map[string]string `yaml:"labels"`
	// GPUs the engine holds (UUIDs or indexes); when set, this wins over
	// any discovered attribution.
	GPUs []string `yaml:"gpus"`
	// Namespace and Pod of the engine in Kubernetes, for attributing GPUs
	// through the kubelet's pod-resources API.
	Namespace string `yaml:"namespace"`
	Pod       string `yaml:"pod"`
	// Traces matches the engine's OTLP request spans to this target.
	Traces *Traces `yaml:"traces"`
	// Proxied says the engine's traffic goes through the measuring proxy
	// (goodput-exporter proxy), which sends each request as a span: the
	// status page then calls its goodput exact, not bounds. Discovery sets
	// it from the goodput-exporter.io/proxy annotation.
	Proxied bool `yaml:"proxied"`
}

// EffectiveTimeout is the target's timeout, else the file default, else fallback.
func (c *Config) EffectiveTimeout(t *Target, fallback time.Duration) time.Duration {
	switch {
	case t.Timeout > 0:
		return time.Duration(t.Timeout)
	case c.Defaults.Timeout > 0:
		return time.Duration(c.Defaults.Timeout)
	}
	return fallback
}

// Load reads and validates a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data)
}

// Parse decodes and validates a configuration document. The error, if
// any, is of type Errors and lists every problem with its line.
func Parse(data []byte) (*Config, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fromYAML(err)
	}
	cfg := &Config{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// Unknown keys, unknown objectives, bad durations and sizes and
	// wrongly typed values are collected as the decoder goes on; the
	// values it could decode are then validated too, so that one run
	// lists every problem of the file.
	var errs Errors
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return nil, fromYAML(err)
		}
		errs = fromYAML(err)
	}
	cfg.applyDefaults()
	decodeLines := map[int]bool{}
	for _, e := range errs {
		decodeLines[e.Line] = true
	}
	for _, e := range cfg.validate(locator{&root}) {
		// A value that could not be decoded is left zero; its line already
		// has the error that says why, not a second one about the zero.
		if !decodeLines[e.Line] || e.Line == 0 {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
		return nil, errs
	}
	return cfg, nil
}

func (c *Config) applyDefaults() {
	if c.Defaults.MaxBodySize == 0 {
		c.Defaults.MaxBodySize = DefaultMaxBodySize
	}
	if c.Defaults.ModelLimit == 0 {
		c.Defaults.ModelLimit = DefaultModelLimit
	}
	for i := range c.Targets {
		c.Targets[i].applyDefaults(&c.Defaults)
	}
}

func (t *Target) applyDefaults(d *TargetDefaults) {
	if t.Engine == "" {
		t.Engine = "auto"
	}
	if t.MaxBodySize == 0 {
		t.MaxBodySize = d.MaxBodySize
	}
	if t.ModelLimit == 0 {
		t.ModelLimit = d.ModelLimit
	}
	if t.Model == "" {
		t.Model = "unknown"
	}
}

// AddTargets appends targets given outside the file (--target NAME=URL)
// and validates the result again.
func (c *Config) AddTargets(ts []Target) error {
	for _, t := range ts {
		t.applyDefaults(&c.Defaults)
		c.Targets = append(c.Targets, t)
	}
	if errs := c.validate(locator{}); len(errs) > 0 {
		return errs
	}
	return nil
}

// ParseTargetFlags reads --target flags of the form NAME=URL.
func ParseTargetFlags(flags []string) ([]Target, error) {
	var out []Target
	for _, f := range flags {
		name, url, ok := strings.Cut(f, "=")
		if !ok || name == "" || url == "" {
			return nil, fmt.Errorf("--target %q: want NAME=URL", f)
		}
		out = append(out, Target{Name: name, URL: url})
	}
	return out, nil
}
