package sim

import (
	"fmt"
	"os"
	"strings"
)

// LoadScenario reads a lever script given inline ("healthy:2m,
// kv_preemption:3m,healthy") or as @FILE: one phase per line or
// comma-separated, # starting a comment.
func LoadScenario(arg string) (Scenario, error) {
	path, isFile := strings.CutPrefix(arg, "@")
	if !isFile {
		return ParseScenario(arg)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario file: %w", err)
	}
	var phases []string
	for _, line := range strings.Split(string(raw), "\n") {
		line, _, _ = strings.Cut(line, "#")
		for _, p := range strings.Split(line, ",") {
			if p = strings.TrimSpace(p); p != "" {
				phases = append(phases, p)
			}
		}
	}
	sc, err := ParseScenario(strings.Join(phases, ","))
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario file %s: %w", path, err)
	}
	return sc, nil
}
