package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Phase holds one lever for a while. A zero Duration, allowed on the last
// phase only, holds it for good.
type Phase struct {
	Lever    Lever
	Duration time.Duration
	// Abort ends every request in the engine, waiting or running, as
	// aborted when the phase starts: the clients are cut off, as when a
	// router drains the engine. It lets one lever's backlog end before
	// the next lever begins.
	Abort bool
}

// Scenario is a script of lever phases from virtual time 0. After the
// last phase its lever stays, unless Repeat starts the script over.
type Scenario struct {
	Phases []Phase
	Repeat bool
}

// ParseScenario reads the text form: comma-separated "lever:duration"
// phases with Go durations, the last duration optional, and an optional
// final "repeat", for example "healthy:2m,kv_preemption:3m,healthy:1m"
// or "healthy:30s,engine_stall:20s,repeat". "abort" before a phase aborts
// every request in the engine as that phase starts:
// "queue_growth:90s,abort,healthy:60s".
func ParseScenario(s string) (Scenario, error) {
	var sc Scenario
	abort := false
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return sc, errors.New("scenario: empty (want lever:duration,...)")
	}
	for i, raw := range parts {
		p := strings.TrimSpace(raw)
		if p == "repeat" {
			if i != len(parts)-1 {
				return Scenario{}, errors.New(`scenario: "repeat" must come last`)
			}
			sc.Repeat = true
			break
		}
		if p == "abort" {
			if abort || i == len(parts)-1 {
				return Scenario{}, fmt.Errorf(`scenario: phase %d: "abort" must come before a phase`, i+1)
			}
			abort = true
			continue
		}
		name, dur, hasDur := strings.Cut(p, ":")
		lever, err := ParseLever(strings.TrimSpace(name))
		if err != nil {
			return Scenario{}, fmt.Errorf("scenario: phase %d %q: %w", i+1, p, err)
		}
		ph := Phase{Lever: lever, Abort: abort}
		abort = false
		if hasDur {
			d, err := time.ParseDuration(strings.TrimSpace(dur))
			if err != nil {
				return Scenario{}, fmt.Errorf("scenario: phase %d %q: bad duration: %w", i+1, p, err)
			}
			if d <= 0 {
				return Scenario{}, fmt.Errorf("scenario: phase %d %q: duration must be positive", i+1, p)
			}
			ph.Duration = d
		}
		sc.Phases = append(sc.Phases, ph)
	}
	return sc, sc.validate()
}

// String is the text form ParseScenario reads.
func (s Scenario) String() string {
	parts := make([]string, 0, len(s.Phases)+1)
	for _, p := range s.Phases {
		if p.Abort {
			parts = append(parts, "abort")
		}
		if p.Duration > 0 {
			parts = append(parts, fmt.Sprintf("%s:%s", p.Lever, p.Duration))
		} else {
			parts = append(parts, string(p.Lever))
		}
	}
	if s.Repeat {
		parts = append(parts, "repeat")
	}
	return strings.Join(parts, ",")
}

// LeverAt is the lever the script holds at virtual time t.
func (s Scenario) LeverAt(t time.Duration) Lever {
	if len(s.Phases) == 0 {
		return Healthy
	}
	if total := s.Duration(); s.Repeat && total > 0 {
		t %= total
	}
	for _, p := range s.Phases {
		if p.Duration == 0 || t < p.Duration {
			return p.Lever
		}
		t -= p.Duration
	}
	return s.Phases[len(s.Phases)-1].Lever
}

// Duration is the length of one pass, 0 when the last phase holds.
func (s Scenario) Duration() time.Duration {
	var total time.Duration
	for _, p := range s.Phases {
		if p.Duration == 0 {
			return 0
		}
		total += p.Duration
	}
	return total
}

func (s Scenario) validate() error {
	if s.Repeat && len(s.Phases) == 0 {
		return errors.New("scenario: repeat needs phases")
	}
	for i, p := range s.Phases {
		if _, err := ParseLever(string(p.Lever)); err != nil {
			return fmt.Errorf("scenario: phase %d: %w", i+1, err)
		}
		if p.Duration < 0 || (p.Duration == 0 && i != len(s.Phases)-1) {
			return fmt.Errorf("scenario: phase %d (%s): only the last phase may omit its duration", i+1, p.Lever)
		}
		if p.Duration == 0 && s.Repeat {
			return fmt.Errorf("scenario: phase %d (%s): repeat needs every phase to have a duration", i+1, p.Lever)
		}
	}
	return nil
}
