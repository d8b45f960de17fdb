package sim

import (
	"math"
	"sort"
)

// hist is a classic cumulative histogram as the engines keep one.
type hist struct {
	bounds []float64
	counts []uint64 // per bucket, the last one is +Inf
	count  uint64
	sum    float64
}

func newHist(bounds []float64) *hist {
	return &hist{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *hist) observe(v float64) { h.observeN(v, 1, v) }

// observeN adds n observations of v to the bucket holding v and sum to
// the sum; SGLang records a chunk of n tokens that way.
func (h *hist) observeN(v float64, n uint64, sum float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)] += n
	h.count += n
	h.sum += sum
}

// cumulative returns the count at or below each bound.
func (h *hist) cumulative() []uint64 {
	out := make([]uint64, len(h.bounds))
	var c uint64
	for i := range h.bounds {
		c += h.counts[i]
		out[i] = c
	}
	return out
}

// Bucket bounds, exactly as the engines define them.
var (
	vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	vllmITLBuckets  = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0}
	vllmReqLatency  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
	vllmIterTokens  = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	vllmParamsN     = []float64{1, 2, 5, 10, 20}
	vllmPreemptions = []float64{1, 2, 3, 4, 5, 10, 20}

	sglangTTFTBuckets  = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400}
	sglangITLBuckets   = []float64{0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0}
	sglangE2EBuckets   = []float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400}
	sglangQueueBuckets = []float64{0.0, 0.1, 0.2, 0.5, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600, 1800, 2000, 2500, 3000}
	sglangRetractions  = []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 75, 100}
	// SGLang's default prompt-token buckets, which its generation-token
	// histogram uses too unless --generation-tokens-buckets says otherwise
	// (TokenizerMetricsCollector).
	sglangTokenBuckets = []float64{100, 300, 500, 700, 1000, 1500, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 12000, 15000, 20000, 22000, 25000, 30000, 35000, 40000, 66000, 99000, 132000, 300000, 600000, 900000, 1100000}
)

// vllmTokenBuckets is vLLM's 1-2-5 series up to max_model_len.
func vllmTokenBuckets(maxModelLen int) []float64 {
	var out []float64
	for e := 1.0; ; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if m*e > float64(maxModelLen) {
				return out
			}
			out = append(out, m*e)
		}
	}
}

// tgiDurationBuckets: TGI's router gives every *_duration histogram 35
// geometric bounds, 0.0001·1.5^k for k = 1..35 (router/src/server.rs).
var tgiDurationBuckets = func() []float64 {
	out := make([]float64, 35)
	b := 0.0001
	for i := range out {
		b *= 1.5
		out[i] = b
	}
	return out
}()

// tgiLinearBuckets are TGI's token histograms' 100 linear bounds up to a
// token limit.
func tgiLinearBuckets(limit int) []float64 {
	out := make([]float64, 100)
	step := float64(limit) / 100
	for i := range out {
		out[i] = step * float64(i+1)
	}
	return out
}

// tritonFirstResponseMs are the bounds the simulated Triton model
// configures for nv_inference_first_response_histogram_ms (Triton takes
// them from the model's metrics configuration), in milliseconds.
var tritonFirstResponseMs = []float64{50, 100, 250, 500, 1000, 2500, 5000, 10000}

// dynamoLogBuckets is Dynamo's generate_log_buckets: 0, then count-1
// log-spaced values from min to max, each rounded to 2 significant
// figures, duplicates removed (lib/llm/src/http/service/metrics.rs).
func dynamoLogBuckets(lo, hi float64, count int) []float64 {
	out := []float64{0}
	for i := 1; i < count; i++ {
		v := math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*float64(i)/float64(count-1))
		mag := math.Floor(math.Log10(v))
		scale := math.Pow(10, 1-mag)
		v = math.Round(v*scale) / scale
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}
