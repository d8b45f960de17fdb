package goodput

import (
	"regexp"
	"slices"
	"strings"
)

// Kind names an objective. The values are the keys of the YAML config.
type Kind string

// The objectives an SLO can declare.
const (
	KindTTFT  Kind = "ttft"  // time to first token, per request
	KindTPOT  Kind = "tpot"  // mean time per output token, per request
	KindITL   Kind = "itl"   // inter-token latency, per token
	KindE2E   Kind = "e2e"   // end-to-end request latency
	KindQueue Kind = "queue" // time spent waiting to be scheduled
	KindError Kind = "error" // share of finished requests that did not fail
)

// Known reports whether k is one of the objectives above.
func (k Kind) Known() bool {
	switch k {
	case KindTTFT, KindTPOT, KindITL, KindE2E, KindQueue, KindError:
		return true
	}
	return false
}

// Latency reports whether k is judged against a latency threshold.
func (k Kind) Latency() bool { return k.Known() && k != KindError }

// Finish reasons that the error objective reads from Model.Finished.
const (
	ReasonError = "error"
	ReasonAbort = "abort"
)

// Objective is one attainment objective of an SLO: at least Target of the
// judged requests meet Threshold ("TTFT P99 < 500 ms" is
// {KindTTFT, 0.5, 0.99}). For KindError, Target is the share of finished
// requests that must not fail and Threshold stays zero.
type Objective struct {
	Kind Kind
	// Threshold in seconds, for latency objectives only.
	Threshold float64
	// Target attainment ratio, in (0,1).
	Target float64
	// IncludeAbort makes the error objective count aborted requests as
	// failures. Requests finished with reason "error" always count; aborts
	// are tallied separately either way, because a client hanging up is not
	// always the server's fault.
	IncludeAbort bool
}

// Match selects the models (and optionally the targets) an SLO applies to.
type Match struct {
	// Model is matched against the whole model name; build it with
	// CompileModel. Nil matches every model.
	Model *regexp.Regexp
	// Targets restricts the SLO to these target names; empty means all.
	Targets []string
}

// CompileModel compiles a model pattern anchored at both ends, so that
// "llama-3.*" does not also match "my-llama-3-fork".
func CompileModel(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(anchor(expr))
}

func anchor(expr string) string { return "^(?:" + expr + ")$" }

func anchored(re *regexp.Regexp) bool {
	s := re.String()
	return strings.HasPrefix(s, "^(?:") && strings.HasSuffix(s, ")$")
}

// Matches reports whether the SLO applies to model on target.
func (m Match) Matches(target, model string) bool {
	if len(m.Targets) > 0 && !slices.Contains(m.Targets, target) {
		return false
	}
	return m.Model == nil || m.Model.MatchString(model)
}

// SLO is a named set of objectives over the requests of the matched models.
// Goodput counts the requests that meet all of them at once.
type SLO struct {
	Name       string
	Match      Match
	Objectives []Objective
}
