package sim

import (
	"errors"
	"fmt"
	"time"
)

// Arrival names an open-loop arrival process.
type Arrival string

// Arrival processes.
const (
	Poisson  Arrival = "poisson"
	Constant Arrival = "constant"
	// Bursty arrivals come in bursts: bursts arrive as a Poisson process
	// at Rate/BurstSize per second, each of a geometric number of
	// requests (mean BurstSize) BurstGap apart, so that the mean rate is
	// still Rate (a batch job's fan-out, a retry storm, a page of users
	// that all ask at once).
	Bursty Arrival = "bursty"
)

// Class is one kind of traffic. It is open loop (Rate requests per second)
// or, when Sessions > 0, closed loop: that many clients each send a request,
// wait for it to finish, think, and send the next.
type Class struct {
	Name    string
	Arrival Arrival
	Rate    float64
	// Sessions and ThinkTime make the class closed loop.
	Sessions  int
	ThinkTime time.Duration
	// Prompt is the length after the shared prefix.
	Prompt Dist
	// Output is the length the model would generate unprompted; requests
	// reaching MaxTokens stop there with finish reason "length".
	Output    Dist
	MaxTokens int
	// PrefixGroups requests share one of this many prefixes of PrefixLen
	// tokens (system prompts, templates). RandomPrefix gives every request
	// a prefix of its own, as a template change that puts a timestamp or
	// a request id at the top of the prompt does.
	PrefixGroups int
	PrefixLen    int
	RandomPrefix bool
	// ClientTimeout overrides the workload's for this class when set.
	ClientTimeout time.Duration
	// BurstSize (mean requests per burst, > 1) and BurstGap (between the
	// requests of one burst) shape Bursty arrivals.
	BurstSize float64
	BurstGap  time.Duration
}

// Workload is the traffic offered to the engine.
type Workload struct {
	Classes []Class
	// ClientTimeout aborts a request whose client has waited this long
	// (the engine sees a disconnect). 0 disables it.
	ClientTimeout time.Duration
	// MaxInFlight caps the requests the open-loop clients hold in the
	// engine at once (a load generator's or gateway's concurrency
	// limit): an arrival while that many wait or run is not sent. 0: no
	// cap. Behind a cap an overload's queue fills and then stands.
	MaxInFlight int
}

// ChatClass is the name of the default interactive traffic class.
const ChatClass = "chat"

// DefaultWorkload is chat traffic: Poisson arrivals, prompts of about 1000
// tokens of which 384 are one of 8 shared system prompts, about 250 output
// tokens, max_tokens 1024.
func DefaultWorkload() Workload {
	return Workload{
		Classes: []Class{{
			Name:         ChatClass,
			Arrival:      Poisson,
			Rate:         10,
			Prompt:       LogNormal(500, 0.7, 16, 16000),
			Output:       LogNormal(210, 0.6, 1, 0),
			MaxTokens:    1024,
			PrefixGroups: 8,
			PrefixLen:    384,
		}},
		ClientTimeout: 60 * time.Second,
	}
}

// Class returns the named class, or nil.
func (w *Workload) Class(name string) *Class {
	for i := range w.Classes {
		if w.Classes[i].Name == name {
			return &w.Classes[i]
		}
	}
	return nil
}

func (w *Workload) validate() error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range w.Classes {
		name := c.Name
		if name == "" {
			name = fmt.Sprintf("class %d", i)
			errs = append(errs, fmt.Errorf("workload: %s has no name", name))
		}
		if seen[name] {
			errs = append(errs, fmt.Errorf("workload: class %q appears twice", name))
		}
		seen[name] = true
		if c.Sessions < 0 || c.Rate < 0 || (c.Sessions == 0 && c.Rate == 0) {
			errs = append(errs, fmt.Errorf("workload: class %q needs a positive rate or sessions", name))
		}
		if c.Sessions == 0 && c.Arrival != Poisson && c.Arrival != Constant && c.Arrival != Bursty {
			errs = append(errs, fmt.Errorf("workload: class %q: unknown arrival %q (want poisson, constant or bursty)", name, c.Arrival))
		}
		if c.Sessions == 0 && c.Arrival == Bursty && (c.BurstSize <= 1 || c.BurstGap < 0) {
			errs = append(errs, fmt.Errorf("workload: class %q: bursty arrivals need a burst size over 1 and a gap of at least 0", name))
		}
		if c.MaxTokens <= 0 {
			errs = append(errs, fmt.Errorf("workload: class %q: max tokens must be positive", name))
		}
		if c.PrefixLen < 0 || (c.PrefixLen > 0 && c.PrefixGroups <= 0 && !c.RandomPrefix) {
			errs = append(errs, fmt.Errorf("workload: class %q: a prefix needs groups or random prefixes", name))
		}
		for _, e := range []error{c.Prompt.validate(name + " prompt"), c.Output.validate(name + " output")} {
			if e != nil {
				errs = append(errs, fmt.Errorf("workload: %w", e))
			}
		}
	}
	if w.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("workload: max in flight %d must not be negative", w.MaxInFlight))
	}
	return errors.Join(errs...)
}

func cloneWorkload(w Workload) Workload {
	w.Classes = append([]Class(nil), w.Classes...)
	return w
}
