package config

import "slices"

// WithDiscovered returns a copy of c whose targets are c's followed by ts,
// the targets service discovery found, each given the file's defaults.
// Discovered targets are built by the daemon, not read from a file, and
// are not validated here; they may carry the namespace, pod and container
// labels that a file's static labels may not set. A discovered target
// whose name a configured target already uses is left out, and its name
// returned: what the file says wins.
func (c *Config) WithDiscovered(ts []Target) (*Config, []string) {
	if len(ts) == 0 {
		return c, nil
	}
	out := *c
	out.Targets = slices.Clip(slices.Clone(c.Targets))
	names := make(map[string]bool, len(c.Targets))
	for _, t := range c.Targets {
		names[t.Name] = true
	}
	var clashed []string
	for _, t := range ts {
		if names[t.Name] {
			clashed = append(clashed, t.Name)
			continue
		}
		names[t.Name] = true
		t.applyDefaults(&c.Defaults)
		out.Targets = append(out.Targets, t)
	}
	return &out, clashed
}
