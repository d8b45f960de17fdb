package goodput

import (
	"math"
	"slices"
	"strings"
	"time"
)

// TracedRequest is one finished request as its engine's request trace span
// describes it (vLLM's llm_request span, see the otlp package). Times are
// in seconds. Unlike a histogram observation it carries every latency of
// the same request, so it can be judged against every objective at once.
type TracedRequest struct {
	// Model is the model that served the request; empty when the span did
	// not say (vLLM V1 omits gen_ai.response.model) and the receiver has
	// to resolve it from the target.
	Model string
	// E2E is arrival to finish; CompletionTokens the tokens generated.
	// Both are always present: a span without them is not a request.
	E2E              float64
	CompletionTokens float64
	// TTFT is arrival to first token, when HasTTFT.
	TTFT    float64
	HasTTFT bool
	// Queue is the time waiting to be scheduled, when HasQueue.
	Queue    float64
	HasQueue bool
	// Decode is first to last token, when HasDecode: vLLM's own
	// request_time_per_output_token is Decode/(tokens-1).
	Decode    float64
	HasDecode bool
	// Failed: the request ended in error (finish reason "error" or an
	// error span status). Aborted: the client went away (reason "abort").
	Failed, Aborted bool
	// TokensEstimated: CompletionTokens is an estimate (a measuring
	// proxy that saw no usage counted the content-bearing chunks), so the
	// time per output token is not known and a tpot objective cannot judge
	// the request (with two tokens or more).
	TokensEstimated bool
	// Sampled is set when the span came from a sampled stream (a sampling
	// probability under one in its trace state): its counts describe a
	// sample of the requests, not all of them.
	Sampled bool
}

// TPOT is the mean time per output token after the first: Decode/(n−1)
// when the span carries the decode time, else (E2E − TTFT)/(n−1). ok is
// false when neither can be formed, or n is an estimate. With fewer than
// two tokens there is no time per output token to miss: 0, ok.
func (r *TracedRequest) TPOT() (float64, bool) {
	if r.CompletionTokens < 2 {
		return 0, true
	}
	if r.TokensEstimated {
		return 0, false
	}
	n := r.CompletionTokens - 1
	switch {
	case r.HasDecode:
		return r.Decode / n, true
	case r.HasTTFT:
		return (r.E2E - r.TTFT) / n, true
	}
	return 0, false
}

// judge says whether r met objective o; known is false when the span lacks
// what the objective needs (the request is then left out of the SLO, and
// counted as unjudged). A request without a first token had no TTFT to
// meet a deadline with: it fails a ttft objective.
func (r *TracedRequest) judge(o Objective) (met, known bool) {
	switch o.Kind {
	case KindTTFT:
		if !r.HasTTFT {
			if r.CompletionTokens == 0 {
				return false, true
			}
			return false, false
		}
		return r.TTFT <= o.Threshold, true
	case KindTPOT:
		v, ok := r.TPOT()
		return ok && v <= o.Threshold, ok
	case KindE2E:
		return r.E2E <= o.Threshold, true
	case KindQueue:
		return r.HasQueue && r.Queue <= o.Threshold, r.HasQueue
	case KindError:
		return !r.Failed && (!o.IncludeAbort || !r.Aborted), true
	}
	// itl is per token: a request span carries no per-token gaps.
	return false, false
}

// ExactCounts are the exact outcomes of one SLO from request traces.
type ExactCounts struct {
	// Objectives are parallel to the SLO's objectives: requests judged
	// against each, and those that met it.
	Objectives []Counts
	// Requests judged against the whole SLO, those that met every
	// objective, and the generation tokens of each.
	Requests, GoodRequests float64
	Tokens, GoodTokens     float64
	// Unjudged are requests whose span lacked what an objective needs
	// (no queue time, no first-token time with tokens generated): left out
	// of every figure above rather than guessed.
	Unjudged float64
}

// ExactSLO is one SLO on one model, judged from request traces.
type ExactSLO struct {
	SLO        string
	Objectives []Objective
	// Supported is false when the SLO has an objective a request span
	// cannot judge (itl, per token): nothing is counted for it.
	Supported bool
	// Exact counts requests from streams traced in full; Sample those from
	// sampled streams. They are never added together.
	Exact, Sample ExactCounts
}

// ExactModel is the traced outcome of every SLO that applies to a model.
type ExactModel struct {
	Model string
	SLOs  []ExactSLO
	// Requests is every traced request folded for the model, whether or
	// not an SLO applies.
	Requests float64
	// Seen is when the model's last request was folded.
	Seen time.Time
	// Unshown is set while the model has only been named by spans, never
	// by its engine (FoldUnshown): it holds one of the few slots of such
	// models, and is forgotten after UnshownTTL without a request.
	Unshown bool
}

// Models named by spans but not (yet) by their engine get a budget of
// their own, apart from the model limit, so that spans naming made-up
// models cannot take the slots of the engine's real ones: at most
// UnshownModels at a time per target, each forgotten UnshownTTL after its
// last request. A real model whose spans arrive before the engine's first
// scrape shows it starts there and moves to the model limit's budget
// once the engine shows it, keeping its counts.
const (
	UnshownModels = 4
	UnshownTTL    = 5 * time.Minute
)

// Exact judges traced requests of one target against its SLOs, exactly,
// one request at a time, and keeps only counts: a request is folded in
// when it arrives and never stored. It is not safe for concurrent use.
type Exact struct {
	target string
	slos   []SLO
	limit  int
	models []ExactModel // sorted by name
	now    func() time.Time
}

// NewExact returns the exact judge of the named target. limit caps the
// models kept (0: no cap); see Fold.
func NewExact(target string, slos []SLO, limit int) *Exact {
	return &Exact{target: target, slos: slos, limit: limit, now: time.Now}
}

// Forget drops the models no request has come for in the last d (the
// last UnshownTTL for models only spans have named), with their counts,
// so that models that come and go (LoRA adapters) do not pile up; one
// that returns starts from zero. It returns how many it dropped.
func (x *Exact) Forget(d time.Duration) int {
	now := x.now()
	cut, cutUnshown := now.Add(-d), now.Add(-min(d, UnshownTTL))
	n := len(x.models)
	x.models = slices.DeleteFunc(x.models, func(m ExactModel) bool {
		return m.Seen.Before(cut) || m.Unshown && m.Seen.Before(cutUnshown)
	})
	return n - len(x.models)
}

// SetLimit changes the cap on models.
func (x *Exact) SetLimit(n int) { x.limit = n }

// Models returns the outcome per model, sorted by name. The slice belongs
// to the judge and changes on the next Fold or Reconfigure.
func (x *Exact) Models() []ExactModel { return x.models }

// Model returns the outcome of the named model, or nil.
func (x *Exact) Model(name string) *ExactModel {
	i, ok := x.find(name)
	if !ok {
		return nil
	}
	return &x.models[i]
}

func (x *Exact) find(name string) (int, bool) {
	return slices.BinarySearchFunc(x.models, name, func(m ExactModel, n string) int { return strings.Compare(m.Model, n) })
}

// Fold judges one request of a model its engine has shown (or the
// configuration names) against every SLO that applies to the model. It
// returns false, counting nothing, when the request names no model or
// when it would be a new model past the cap. A model that spans alone had
// named moves into the cap's budget, with its counts, when there is room.
func (x *Exact) Fold(r *TracedRequest) bool {
	return x.fold(r, false)
}

// FoldUnshown is Fold for a request of a model its engine has not shown:
// a model new to the judge takes one of the UnshownModels slots, and the
// request is refused (false) when they are all taken.
func (x *Exact) FoldUnshown(r *TracedRequest) bool {
	return x.fold(r, true)
}

func (x *Exact) fold(r *TracedRequest, unshown bool) bool {
	if r.Model == "" {
		return false
	}
	i, ok := x.find(r.Model)
	switch {
	case !ok:
		if x.count(unshown) >= x.budget(unshown) {
			return false
		}
		m := x.newModel(r.Model)
		m.Unshown = unshown
		x.models = slices.Insert(x.models, i, m)
	case x.models[i].Unshown && !unshown && x.count(false) < x.budget(false):
		x.models[i].Unshown = false
	}
	m := &x.models[i]
	m.Requests++
	m.Seen = x.now()
	for k := range m.SLOs {
		m.SLOs[k].fold(r)
	}
	return true
}

// count is the number of models held in one budget.
func (x *Exact) count(unshown bool) int {
	n := 0
	for i := range x.models {
		if x.models[i].Unshown == unshown {
			n++
		}
	}
	return n
}

// budget is the size of one budget; a model limit of 0 is no cap.
func (x *Exact) budget(unshown bool) int {
	switch {
	case unshown && x.limit > 0:
		return min(UnshownModels, x.limit)
	case unshown:
		return UnshownModels
	case x.limit > 0:
		return x.limit
	}
	return math.MaxInt
}

func (x *Exact) newModel(name string) ExactModel {
	m := ExactModel{Model: name}
	for _, s := range x.slos {
		if s.Match.Matches(x.target, name) {
			m.SLOs = append(m.SLOs, newExactSLO(s))
		}
	}
	return m
}

func newExactSLO(s SLO) ExactSLO {
	e := ExactSLO{SLO: s.Name, Objectives: s.Objectives, Supported: true}
	for _, o := range s.Objectives {
		e.Supported = e.Supported && o.Kind != KindITL
	}
	e.Exact.Objectives = make([]Counts, len(s.Objectives))
	e.Sample.Objectives = make([]Counts, len(s.Objectives))
	return e
}

func (e *ExactSLO) fold(r *TracedRequest) {
	if !e.Supported {
		return
	}
	c := &e.Exact
	if r.Sampled {
		c = &e.Sample
	}
	for _, o := range e.Objectives {
		if _, known := r.judge(o); !known {
			c.Unjudged++
			return
		}
	}
	all := true
	for k, o := range e.Objectives {
		met, _ := r.judge(o)
		all = all && met
		c.Objectives[k].Judged++
		if met {
			c.Objectives[k].Good++
		}
		if o.Kind == KindError && r.Aborted {
			c.Objectives[k].Aborted++
		}
	}
	c.Requests++
	c.Tokens += r.CompletionTokens
	if all {
		c.GoodRequests++
		c.GoodTokens += r.CompletionTokens
	}
}

// Reconfigure applies new SLOs: an SLO whose objectives are unchanged and
// that still applies keeps its counts; the others start from zero.
func (x *Exact) Reconfigure(slos []SLO) {
	x.slos = slos
	for i := range x.models {
		m := &x.models[i]
		old := m.SLOs
		fresh := x.newModel(m.Model)
		for k := range fresh.SLOs {
			for _, o := range old {
				if o.SLO == fresh.SLOs[k].SLO && slices.Equal(o.Objectives, fresh.SLOs[k].Objectives) {
					fresh.SLOs[k] = o
				}
			}
		}
		m.SLOs = fresh.SLOs
	}
}
