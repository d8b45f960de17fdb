package goodput

// Counts are request counts judged against one objective.
type Counts struct {
	// Judged is how many requests (tokens for itl, and in
	// ObjectiveState.Tokens) were judged: observations of the histogram, or finished requests of any
	// reason for the error objective.
	Judged float64
	// Good is how many of them met the objective (interpolated at the
	// threshold, see GoodAt).
	Good float64
	// Interpolated is how many of the judged fell in the bucket that
	// straddles the threshold: the window's uncertainty. Zero when the
	// threshold is a bucket bound.
	Interpolated float64
	// Aborted is how many finished requests were aborted (error objective
	// only), counted whether or not they count as failures.
	Aborted float64
}

// Attainment is Good/Judged; ok is false when nothing was judged.
func (c Counts) Attainment() (p float64, ok bool) {
	if !(c.Judged > 0) {
		return 0, false
	}
	return c.Good / c.Judged, true
}

func (c *Counts) add(o Counts) {
	c.Judged += o.Judged
	c.Good += o.Good
	c.Interpolated += o.Interpolated
	c.Aborted += o.Aborted
}

// ObjectiveState is one objective of one SLO on one model.
type ObjectiveState struct {
	Objective  Objective
	Resolution Resolution // as of the latest snapshot
	// Total is cumulative since the tracker started; it never decreases.
	Total Counts
	// Interval is the increase between the last two snapshots; zero when
	// the last snapshot only set a baseline, had no traffic, or could not
	// measure the objective.
	Interval Counts
	// Skipped is set when the objective's data glitched or changed its
	// bucket layout in the last interval: nothing was judged, and the
	// SLO's joint goodput was not judged either.
	Skipped bool
	// Tokens are the judgements of a per-request objective made per token
	// (tpot judged from the inter-token histogram while the model has no
	// per-request TPOT histogram, Resolution.Fallback): counted apart, in
	// tokens, never in Total, so that Total counts requests only, however
	// often the source switches. Cumulative, never decreasing;
	// TokenInterval is the last interval's.
	Tokens, TokenInterval Counts
}

// GoodCounts are goodput requests and tokens, per bound.
type GoodCounts struct {
	Requests Bounds
	Tokens   Bounds
}

// JointInterval is the joint outcome between the last two snapshots.
type JointInterval struct {
	// OK is false when no objective judged anything in the interval;
	// the other fields are then zero.
	OK bool
	// Attainment bounds the share of requests meeting every objective in
	// the interval: JointBounds over the attainments of the objectives
	// that judged something, each widened by its interpolated requests.
	// Like any window's bounds they hold up to the requests in flight at
	// the interval's edges, which weigh most in one short interval.
	Attainment Bounds
	// Requests finished in the interval (see Joint.RequestsSource) and
	// their generation tokens: with TokensBounded, the tokens of the
	// requests that finished in the interval (the output-length
	// histogram's sum); without, the tokens generated in the interval.
	Requests, Tokens float64
	// Good is Requests times Attainment, and the good requests' tokens:
	// bounds from the output-length histogram when TokensBounded (see
	// TokenBounds), else the estimate Tokens times Attainment.
	Good GoodCounts
	// TokensBounded says Good.Tokens are true bounds for this interval.
	TokensBounded bool
}

// Joint is the goodput of one SLO on one model: the requests that meet
// every objective at once, bounded from the per-objective attainments.
type Joint struct {
	// Supported is false when any objective of the SLO is unsupported on
	// the model; the joint is then not computed and must not be exported.
	Supported bool
	// RequestsSource names the count of finished requests goodput requests
	// are taken from (RequestsFrom*); empty when the model has none, and
	// then Total.Requests stays zero and must not be exported.
	RequestsSource string
	// TokensSupported is false when the model has neither a generation
	// token counter nor an output-length histogram; Total.Tokens then
	// stays zero and must not be exported.
	TokensSupported bool
	// TokensBounded is set when goodput tokens are true bounds: the model
	// has the per-request output-length histogram and every objective of
	// the SLO judges requests (none is per token). Otherwise they are an
	// estimate: the interval's generation tokens times the attainment
	// bounds, which puts the lower bound too high when failing requests
	// are longer than passing ones. As of the latest snapshot.
	TokensBounded bool
	// Total is cumulative since the tracker started; it never decreases.
	// Total.Requests are cumulative Fréchet bounds over Window: Upper is
	// min(Window.Requests, min_k Window.Good[k]) and Lower the highest
	// Window.Requests − Window.Failed reached so far, held at most at
	// Upper. The increase of
	// each between two readings bounds the window between them as
	// WindowBounds does (lower − edge ≤ truth ≤ upper + edge), because
	// the increase of a minimum of growing counts is at least the minimum
	// of their increases, and a running maximum grows by no more than the
	// quantity it follows. They are looser than WindowBounds over the same
	// window (an incident is judged against the history's worst
	// objective); a per-window view reads Window (the rules do, from the
	// llm_goodput_*judged/failed/objective_good* series). Total.Tokens
	// add up each interval's token bounds: bounds of each interval's
	// finished requests, not guaranteed over windows in which objectives
	// judged different requests (see docs/accuracy.md); the token bounds
	// over a window are WindowTokenBounds of two readings of Window.
	Total GoodCounts
	// Window holds the cumulative counts that bound the good requests of
	// any window (WindowBounds between two readings of it).
	Window WindowTotals
	// lowest is the highest Window.Requests − Window.Failed so far.
	lowest float64
	// Interval is the last interval's outcome, for a live view.
	Interval JointInterval
}

// SLOState is one SLO applied to one model.
type SLOState struct {
	SLO        string
	Objectives []ObjectiveState // in the SLO's declaration order
	Joint      Joint
}

// ModelState is everything the tracker knows about one model of a target.
type ModelState struct {
	Model string
	// Present is false when the latest snapshot did not list the model;
	// its totals are kept and its intervals are zero.
	Present bool
	// SLOs that match the model, in configuration order; empty when none
	// does (the model is then not measured at all).
	SLOs []SLOState
}
