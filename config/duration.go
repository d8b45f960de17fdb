package config

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Duration is a length of time written as Go and Prometheus write them:
// 500ms, 2.5s, 0.5s, 1.5m, 1m30s, 1h, and Prometheus' 1d, 1w, 1y. Decimals
// matter: engines' bucket bounds include 2.5 s and 7.5 s, and a threshold
// on a bound is judged exactly.
type Duration time.Duration

// ParseDuration reads a duration as Go's time.ParseDuration does
// (decimals, ns to h), else as Prometheus does (adds d, w and y).
func ParseDuration(s string) (Duration, error) {
	if v, err := time.ParseDuration(s); err == nil {
		return Duration(v), nil
	}
	v, err := model.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use 500ms, 2.5s, 1m)", s)
	}
	return Duration(v), nil
}

// UnmarshalYAML parses a duration and names the line on error. The error
// is a yaml.TypeError, so that decoding goes on and every other problem
// of the file is reported in the same run.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %v", n.Line, err)}}
	}
	*d = v
	return nil
}

// String formats like Prometheus.
func (d Duration) String() string { return model.Duration(d).String() }
