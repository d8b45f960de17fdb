package goodput

import (
	"slices"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func TestBucketFamily(t *testing.T) {
	want := map[Kind]string{
		KindTTFT:  FamilyTTFT,
		KindITL:   FamilyInterToken,
		KindTPOT:  FamilyInterToken,
		KindE2E:   FamilyRequestLatency,
		KindQueue: FamilyRequestLatency,
		KindError: "",
	}
	for k, w := range want {
		got, ok := BucketFamily(k)
		if got != w || ok != (w != "") {
			t.Errorf("BucketFamily(%q) = %q, %v; want %q", k, got, ok, w)
		}
	}
}

func TestInsertBounds(t *testing.T) {
	b := []float64{0.1, 0.25, 0.5, 1}
	cases := []struct {
		thresholds []float64
		want       []float64
	}{
		{[]float64{0.3}, []float64{0.1, 0.25, 0.3, 0.5, 1}},
		{[]float64{0.5}, []float64{0.1, 0.25, 0.5, 1}},
		{[]float64{2, 0.05, 0.3, 0.3}, []float64{0.05, 0.1, 0.25, 0.3, 0.5, 1, 2}},
	}
	for _, c := range cases {
		got := InsertBounds(b, c.thresholds...)
		if !slices.Equal(got, c.want) {
			t.Errorf("InsertBounds(%v, %v) = %v, want %v", b, c.thresholds, got, c.want)
		}
	}
	if !slices.Equal(b, []float64{0.1, 0.25, 0.5, 1}) {
		t.Errorf("InsertBounds changed its input: %v", b)
	}
}

func TestBucketAdvice(t *testing.T) {
	m := vllmLike("m").render(nil)
	slos := []SLO{
		{Name: "chat", Objectives: []Objective{
			{Kind: KindTTFT, Threshold: 0.3, Target: 0.99},  // between 0.25 and 0.5
			{Kind: KindTPOT, Threshold: 0.05, Target: 0.95}, // a bound
			{Kind: KindE2E, Threshold: 1, Target: 0.99},     // a bound
			{Kind: KindError, Target: 0.999},
		}},
		{Name: "batch", Objectives: []Objective{
			{Kind: KindITL, Threshold: 0.03, Target: 0.9},
			{Kind: KindTPOT, Threshold: 0.06, Target: 0.9},
			{Kind: KindQueue, Threshold: 3, Target: 0.9},
		}},
	}
	got, err := CustomHistogramBuckets(BucketAdvice(&m, slos...))
	want := `{"inter_token_latency":[0.01,0.025,0.03,0.05,0.06,0.075,0.1,0.15,0.2,0.3,0.4,0.5,0.75,1,2.5,5,7.5,10,20,40,80],` +
		`"request_latency":[0.3,0.5,0.8,1,1.5,2,2.5,3,5,10,15,20,30,40,50,60,120,240,480,960,1920,7680],` +
		`"time_to_first_token":[0.001,0.005,0.01,0.02,0.04,0.06,0.08,0.1,0.25,0.3,0.5,0.75,1,2.5,5,7.5,10,20,40,80,160,640,2560]}`
	if err != nil || got != want {
		t.Errorf("advice = %s, %v\nwant %s", got, err, want)
	}
	if a := BucketAdvice(&m, SLO{Name: "on", Objectives: slos[0].Objectives[1:3]}); a != nil {
		t.Errorf("advice with every threshold on a bound = %v, want nil", a)
	}
	// A model that cannot measure an objective gets no advice for it.
	var bare snapshot.Model
	if a := BucketAdvice(&bare, slos...); a != nil {
		t.Errorf("advice for a model without histograms = %v, want nil", a)
	}
}
