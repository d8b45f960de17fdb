package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// SLO is one named service-level objective as written in the file.
type SLO struct {
	Name       string     `yaml:"name"`
	Match      SLOMatch   `yaml:"match"`
	Objectives Objectives `yaml:"objectives"`
	// compiled by validate
	slo goodput.SLO
}

// SLOMatch selects the models, and optionally the targets, an SLO covers.
type SLOMatch struct {
	// Model is a regular expression matched against the whole model name;
	// empty matches every model.
	Model   string   `yaml:"model"`
	Targets []string `yaml:"targets"`
}

// Objectives are the objectives of one SLO; the keys are the objective
// names, so an unknown one is an unknown-field error on its line.
type Objectives struct {
	TTFT  *Objective `yaml:"ttft"`
	TPOT  *Objective `yaml:"tpot"`
	ITL   *Objective `yaml:"itl"`
	E2E   *Objective `yaml:"e2e"`
	Queue *Objective `yaml:"queue"`
	Error *Objective `yaml:"error"`
}

// Objective is a threshold and the share of requests that must meet it.
type Objective struct {
	Threshold Duration `yaml:"threshold"`
	Target    float64  `yaml:"target"`
	// IncludeAbort counts aborted requests as failures (error objective).
	IncludeAbort bool `yaml:"include_abort"`
}

func (o *Objectives) list() []struct {
	kind goodput.Kind
	obj  *Objective
} {
	all := []struct {
		kind goodput.Kind
		obj  *Objective
	}{
		{goodput.KindTTFT, o.TTFT}, {goodput.KindTPOT, o.TPOT}, {goodput.KindITL, o.ITL},
		{goodput.KindE2E, o.E2E}, {goodput.KindQueue, o.Queue}, {goodput.KindError, o.Error},
	}
	return slices.DeleteFunc(all, func(x struct {
		kind goodput.Kind
		obj  *Objective
	}) bool {
		return x.obj == nil
	})
}

// GoodputSLOs returns the validated SLOs in the form the goodput maths
// takes, in file order.
func (c *Config) GoodputSLOs() []goodput.SLO {
	out := make([]goodput.SLO, len(c.SLOs))
	for i := range c.SLOs {
		out[i] = c.SLOs[i].slo
	}
	return out
}

// compileSLOs builds goodput.SLO values and reports problems with the
// lines they are on.
func (c *Config) compileSLOs(loc locator, add func(int, string, string, ...any)) {
	names := map[string]bool{}
	for _, t := range c.Targets {
		names[t.Name] = true
	}
	for i := range c.SLOs {
		s := &c.SLOs[i]
		p := fmt.Sprintf("slos[%d]", i)
		s.slo = goodput.SLO{Name: s.Name, Match: goodput.Match{Targets: s.Match.Targets}}
		if s.Match.Model != "" {
			re, err := goodput.CompileModel(s.Match.Model)
			if err != nil {
				if _, rawErr := regexp.Compile(s.Match.Model); rawErr != nil {
					err = rawErr // the message then quotes what the user wrote
				}
				add(loc.line("slos", i, "match", "model"), p+".match.model", "%q is not a regular expression: %v", s.Match.Model, err)
			}
			s.slo.Match.Model = re
		}
		for j, tn := range s.Match.Targets {
			if !names[tn] {
				add(loc.line("slos", i, "match", "targets", j), p+".match.targets", "no target is named %q", tn)
			}
		}
		for _, o := range s.Objectives.list() {
			s.slo.Objectives = append(s.slo.Objectives, goodput.Objective{
				Kind: o.kind, Threshold: o.obj.Threshold.Seconds(), Target: o.obj.Target, IncludeAbort: o.obj.IncludeAbort,
			})
		}
		if err := s.slo.Validate(); err != nil {
			for _, fe := range fieldErrors(err) {
				path := []any{"slos", i}
				where := p
				if fe.Objective != "" {
					path = append(path, "objectives", string(fe.Objective))
					where += ".objectives." + string(fe.Objective)
				}
				if fe.Field != "" {
					for _, part := range strings.Split(fe.Field, ".") {
						path = append(path, part)
					}
					where += "." + fe.Field
				}
				add(loc.line(path...), where, "%s", fe.Msg)
			}
		}
	}
	seen := map[string]int{}
	for i, s := range c.SLOs {
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			add(loc.line("slos", i, "name"), fmt.Sprintf("slos[%d].name", i), "%q is already used by slos[%d]", s.Name, j)
		}
		if n := len(s.Name); n > snapshot.MaxLabelValue {
			add(loc.line("slos", i, "name"), fmt.Sprintf("slos[%d].name", i), "is %d bytes, longer than the %d-byte cap on label values", n, snapshot.MaxLabelValue)
		}
		seen[s.Name] = i
	}
}

// fieldErrors flattens what goodput's validation returned.
func fieldErrors(err error) []*goodput.FieldError {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*goodput.FieldError
		for _, e := range j.Unwrap() {
			out = append(out, fieldErrors(e)...)
		}
		return out
	}
	var fe *goodput.FieldError
	if errors.As(err, &fe) {
		return []*goodput.FieldError{fe}
	}
	return []*goodput.FieldError{{Msg: err.Error()}}
}

// Seconds returns the duration in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e9 }
