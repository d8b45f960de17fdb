package config

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// Duration is written as Prometheus writes durations: 500ms, 5s, 1m30s, 1h.
type Duration time.Duration

// UnmarshalYAML parses a Prometheus duration and names the line on error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := model.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (use 500ms, 5s, 1m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// String formats like Prometheus.
func (d Duration) String() string { return model.Duration(d).String() }
