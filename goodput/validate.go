package goodput

import (
	"errors"
	"fmt"
	"math"
)

// FieldError is one problem with one SLO, named so that the config layer can
// point at the YAML line: Field is the key inside the SLO ("name",
// "match.model", "match.targets", "objectives") or inside the objective
// ("threshold", "target", "include_abort"), empty when the objective key
// itself is wrong.
type FieldError struct {
	SLO       string
	Objective Kind // empty for SLO-level problems
	Field     string
	Msg       string
}

func (e *FieldError) Error() string {
	s := fmt.Sprintf("slo %q", e.SLO)
	if e.Objective != "" {
		s += fmt.Sprintf(": objective %q", e.Objective)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// Validate checks one SLO. It returns nil or an errors.Join of *FieldError,
// one per problem, in declaration order; unwrap it with
// interface{ Unwrap() []error } to place each one.
func (s *SLO) Validate() error {
	var errs []error
	add := func(k Kind, field, format string, args ...any) {
		errs = append(errs, &FieldError{SLO: s.Name, Objective: k, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		add("", "name", "must not be empty")
	}
	if s.Match.Model != nil && !anchored(s.Match.Model) {
		add("", "match.model", "pattern %q is not anchored; compile it with CompileModel", s.Match.Model.String())
	}
	for _, t := range s.Match.Targets {
		if t == "" {
			add("", "match.targets", "must not contain an empty target name")
		}
	}
	if len(s.Objectives) == 0 {
		add("", "objectives", "at least one objective is required")
	}
	seen := make(map[Kind]bool, len(s.Objectives))
	for _, o := range s.Objectives {
		if !o.Kind.Known() {
			add(o.Kind, "", "unknown objective (want ttft, tpot, itl, e2e, queue or error)")
			continue
		}
		if seen[o.Kind] {
			add(o.Kind, "", "declared more than once")
		}
		seen[o.Kind] = true
		switch {
		case o.Kind.Latency() && !(o.Threshold > 0 && !math.IsInf(o.Threshold, 1)):
			add(o.Kind, "threshold", "must be a positive number of seconds, got %v", o.Threshold)
		case !o.Kind.Latency() && o.Threshold != 0:
			add(o.Kind, "threshold", "the error objective takes no threshold")
		}
		if !(o.Target > 0 && o.Target < 1) {
			add(o.Kind, "target", "must be a ratio strictly between 0 and 1, got %v", o.Target)
		}
		if o.IncludeAbort && o.Kind != KindError {
			add(o.Kind, "include_abort", "only the error objective counts aborts")
		}
	}
	return errors.Join(errs...)
}

// ValidateSLOs validates each SLO and rejects duplicate names, which would
// collide on the slo label.
func ValidateSLOs(slos []SLO) error {
	var errs []error
	seen := make(map[string]bool, len(slos))
	for i := range slos {
		if err := slos[i].Validate(); err != nil {
			// Flatten so that callers unwrap one level to reach every *FieldError.
			errs = append(errs, err.(interface{ Unwrap() []error }).Unwrap()...)
		}
		if n := slos[i].Name; n != "" {
			if seen[n] {
				errs = append(errs, &FieldError{SLO: n, Field: "name", Msg: "declared more than once"})
			}
			seen[n] = true
		}
	}
	return errors.Join(errs...)
}
