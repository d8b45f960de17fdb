package goodput

import (
	"encoding/json"
	"slices"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Family keys of vLLM's --custom-histogram-buckets (vllm/v1/metrics/buckets.py).
const (
	FamilyTTFT           = "time_to_first_token" // time_to_first_token_seconds
	FamilyInterToken     = "inter_token_latency" // inter_token_latency_seconds, request_time_per_output_token_seconds
	FamilyRequestLatency = "request_latency"     // e2e_request_latency_seconds, request_queue_time_seconds, …
)

// BucketFamily returns the vLLM bucket family whose bounds judge objective
// k; false for the error objective, which has no histogram.
func BucketFamily(k Kind) (string, bool) {
	switch k {
	case KindTTFT:
		return FamilyTTFT, true
	case KindITL, KindTPOT:
		return FamilyInterToken, true
	case KindE2E, KindQueue:
		return FamilyRequestLatency, true
	}
	return "", false
}

// IsBound reports whether t is one of the bounds, where attainment is
// exact rather than interpolated.
func IsBound(bounds []float64, t float64) bool { return slices.Contains(bounds, t) }

// InsertBounds returns a new bound list: bounds and thresholds, sorted,
// without duplicates.
func InsertBounds(bounds []float64, thresholds ...float64) []float64 {
	out := make([]float64, 0, len(bounds)+len(thresholds))
	out = append(append(out, bounds...), thresholds...)
	slices.Sort(out)
	return slices.Compact(out)
}

// BucketAdvice returns, per bucket family, the model's bounds with every
// threshold of slos that is not already one of them inserted, so that the
// objective is judged exactly instead of interpolated. Objectives the model
// cannot measure are skipped. Nil when every threshold is a bound. Pass the
// SLOs that apply to the model.
func BucketAdvice(m *snapshot.Model, slos ...SLO) map[string][]float64 {
	var advice map[string][]float64
	for _, s := range slos {
		for _, o := range s.Objectives {
			fam, ok := BucketFamily(o.Kind)
			r := Resolve(m, o.Kind)
			if !ok || !r.Supported {
				continue
			}
			bounds := m.Hists[r.Hist].Bounds
			if IsBound(bounds, o.Threshold) {
				continue
			}
			if prev, ok := advice[fam]; ok {
				bounds = prev
			}
			if advice == nil {
				advice = map[string][]float64{}
			}
			advice[fam] = InsertBounds(bounds, o.Threshold)
		}
	}
	return advice
}

// CustomHistogramBuckets formats families (family key → bounds) as the
// JSON value of vLLM's --custom-histogram-buckets flag, keys sorted:
// {"time_to_first_token":[0.001,0.005,…]}.
func CustomHistogramBuckets(families map[string][]float64) (string, error) {
	b, err := json.Marshal(families)
	return string(b), err
}
