package goodput

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := func() SLO {
		return SLO{Name: "chat", Objectives: []Objective{
			{Kind: KindTTFT, Threshold: 0.5, Target: 0.99},
			{Kind: KindError, Target: 0.999, IncludeAbort: true},
		}}
	}
	cases := []struct {
		name   string
		change func(*SLO)
		want   []string // one line per problem; empty = valid
	}{
		{"valid", func(*SLO) {}, nil},
		{"valid anchored model", func(s *SLO) { s.Match.Model = regexp.MustCompile(`^(?:llama-3.*)$`) }, nil},
		{"empty name", func(s *SLO) { s.Name = "" }, []string{`slo "": name: must not be empty`}},
		{"unanchored model", func(s *SLO) { s.Match.Model = regexp.MustCompile(`llama`) },
			[]string{`slo "chat": match.model: pattern "llama" is not anchored; compile it with CompileModel`}},
		{"empty target", func(s *SLO) { s.Match.Targets = []string{"a", ""} },
			[]string{`slo "chat": match.targets: must not contain an empty target name`}},
		{"no objectives", func(s *SLO) { s.Objectives = nil },
			[]string{`slo "chat": objectives: at least one objective is required`}},
		{"unknown objective", func(s *SLO) { s.Objectives[0].Kind = "latency" },
			[]string{`slo "chat": objective "latency": unknown objective (want ttft, tpot, itl, e2e, queue or error)`}},
		{"duplicate objective", func(s *SLO) { s.Objectives[1] = s.Objectives[0] },
			[]string{`slo "chat": objective "ttft": declared more than once`}},
		{"zero threshold", func(s *SLO) { s.Objectives[0].Threshold = 0 },
			[]string{`slo "chat": objective "ttft": threshold: must be a positive number of seconds, got 0`}},
		{"negative threshold", func(s *SLO) { s.Objectives[0].Threshold = -0.5 },
			[]string{`slo "chat": objective "ttft": threshold: must be a positive number of seconds, got -0.5`}},
		{"infinite threshold", func(s *SLO) { s.Objectives[0].Threshold = math.Inf(1) },
			[]string{`slo "chat": objective "ttft": threshold: must be a positive number of seconds, got +Inf`}},
		{"error with threshold", func(s *SLO) { s.Objectives[1].Threshold = 1 },
			[]string{`slo "chat": objective "error": threshold: the error objective takes no threshold`}},
		{"target one", func(s *SLO) { s.Objectives[0].Target = 1 },
			[]string{`slo "chat": objective "ttft": target: must be a ratio strictly between 0 and 1, got 1`}},
		{"target zero", func(s *SLO) { s.Objectives[1].Target = 0 },
			[]string{`slo "chat": objective "error": target: must be a ratio strictly between 0 and 1, got 0`}},
		{"target percent", func(s *SLO) { s.Objectives[0].Target = 99 },
			[]string{`slo "chat": objective "ttft": target: must be a ratio strictly between 0 and 1, got 99`}},
		{"target NaN", func(s *SLO) { s.Objectives[0].Target = math.NaN() },
			[]string{`slo "chat": objective "ttft": target: must be a ratio strictly between 0 and 1, got NaN`}},
		{"abort on latency", func(s *SLO) { s.Objectives[0].IncludeAbort = true },
			[]string{`slo "chat": objective "ttft": include_abort: only the error objective counts aborts`}},
		{"several problems", func(s *SLO) { s.Objectives[0].Threshold = 0; s.Objectives[0].Target = 2 },
			[]string{
				`slo "chat": objective "ttft": threshold: must be a positive number of seconds, got 0`,
				`slo "chat": objective "ttft": target: must be a ratio strictly between 0 and 1, got 2`,
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := ok()
			c.change(&s)
			err := s.Validate()
			if c.want == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", c.want)
			}
			if got := err.Error(); got != strings.Join(c.want, "\n") {
				t.Errorf("Validate() =\n%s\nwant\n%s", got, strings.Join(c.want, "\n"))
			}
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Errorf("problem %v is not a *FieldError", e)
				}
			}
		})
	}
}

func TestValidateSLOs(t *testing.T) {
	slos := []SLO{
		{Name: "chat", Objectives: []Objective{{Kind: KindTTFT, Threshold: 0.5, Target: 0.99}}},
		{Name: "batch", Objectives: []Objective{{Kind: KindE2E, Threshold: 0, Target: 0.9}}},
		{Name: "chat", Objectives: []Objective{{Kind: KindError, Target: 0.999}}},
	}
	err := ValidateSLOs(slos)
	if err == nil {
		t.Fatal("ValidateSLOs() = nil, want errors")
	}
	problems := err.(interface{ Unwrap() []error }).Unwrap()
	want := []FieldError{
		{SLO: "batch", Objective: KindE2E, Field: "threshold", Msg: "must be a positive number of seconds, got 0"},
		{SLO: "chat", Field: "name", Msg: "declared more than once"},
	}
	if len(problems) != len(want) {
		t.Fatalf("got %d problems (%v), want %d", len(problems), err, len(want))
	}
	for i, p := range problems {
		var fe *FieldError
		if !errors.As(p, &fe) || *fe != want[i] {
			t.Errorf("problem %d = %#v, want %#v", i, p, want[i])
		}
	}
	if err := ValidateSLOs(slos[:1]); err != nil {
		t.Errorf("ValidateSLOs(valid) = %v", err)
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		m             Match
		target, model string
		want          bool
	}{
		{Match{}, "any", "anything", true},
		{Match{Model: mustModel(t, "llama-3.*")}, "t", "llama-3.1-8b", true},
		{Match{Model: mustModel(t, "llama-3.*")}, "t", "my-llama-3.1-8b", false}, // anchored at the start
		{Match{Model: mustModel(t, "llama-3")}, "t", "llama-3.1", false},         // and at the end
		{Match{Model: mustModel(t, "a|b")}, "t", "b", true},                      // alternation stays inside the anchors
		{Match{Model: mustModel(t, "a|b")}, "t", "ab", false},
		{Match{Targets: []string{"vllm-0", "vllm-1"}}, "vllm-1", "m", true},
		{Match{Targets: []string{"vllm-0"}}, "vllm-1", "m", false},
		{Match{Model: mustModel(t, "m"), Targets: []string{"vllm-0"}}, "vllm-0", "x", false},
	}
	for _, c := range cases {
		if got := c.m.Matches(c.target, c.model); got != c.want {
			t.Errorf("Match{%v %v}.Matches(%q, %q) = %v, want %v", c.m.Model, c.m.Targets, c.target, c.model, got, c.want)
		}
	}
}
