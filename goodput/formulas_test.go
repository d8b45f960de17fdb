package goodput

import (
	"math"
	"testing"
)

// The worked numbers below are DESIGN.md's test vectors from the field.

func TestGoodput(t *testing.T) {
	checkNear(t, "Goodput(100, 0.99)", Goodput(100, 0.99), 99)
	checkNear(t, "Goodput(200, 0.4)", Goodput(200, 0.4), 80)
}

func TestCostPerMillionGoodTokens(t *testing.T) {
	c, ok := CostPerMillionGoodTokens(11, 3330)
	if !ok || math.Round(c*100)/100 != 0.92 {
		t.Errorf("CostPerMillionGoodTokens(11 €/h, 3330 tok/s) = %v, %v; want 0.92 to 2 decimals", c, ok)
	}
	checkNear(t, "CostPerMillionGoodTokens(3.6, 1)", func() float64 { c, _ := CostPerMillionGoodTokens(3.6, 1); return c }(), 1000)
	for _, tps := range []float64{0, -1, math.NaN()} {
		if c, ok := CostPerMillionGoodTokens(11, tps); ok {
			t.Errorf("CostPerMillionGoodTokens(11, %v) = %v, true; want no cost", tps, c)
		}
	}
}

func TestReplicas(t *testing.T) {
	cases := []struct {
		peak, per float64
		want      int
	}{
		{20000, 3330, 6}, // the field's worked number: 6.006 replicas is 6
		{19980, 3330, 6},
		{20200, 3330, 7}, // 6.066: more than the slack over 6
		{6660, 3330, 2},
		{0.3, 0.1, 3}, // 2.9999999999999996 in floats
		{0, 3330, 0},
		{1, 3330, 1},
	}
	for _, c := range cases {
		got, err := Replicas(c.peak, c.per)
		if err != nil || got != c.want {
			t.Errorf("Replicas(%v, %v) = %v, %v; want %v", c.peak, c.per, got, err, c.want)
		}
	}
	for _, bad := range [][2]float64{{100, 0}, {100, -1}, {-1, 10}, {math.NaN(), 10}, {100, math.Inf(1)}} {
		if got, err := Replicas(bad[0], bad[1]); err == nil {
			t.Errorf("Replicas(%v, %v) = %v, nil; want an error", bad[0], bad[1], got)
		}
	}
}

func TestKnee(t *testing.T) {
	// Rate req/s, TTFT P99 s, throughput tok/s, goodput tok/s under TTFT P99 < 500 ms.
	sweep := []SweepStep{
		{2, 0.095, 480, 480},
		{8, 0.140, 1900, 1900},
		{14, 0.240, 3100, 3060},
		{17, 0.460, 3400, 3330},
		{20, 0.760, 3700, 2520},
		{26, 1.500, 3950, 900},
		{30, 2.400, 4000, 380},
	}
	k, err := Knee(sweep)
	if err != nil || k.Rate != 17 || k.Goodput != 3330 {
		t.Errorf("Knee(sweep) = %+v, %v; want 17 req/s at 3330 tok/s", k, err)
	}
	tie := []SweepStep{{Rate: 10, Goodput: 100}, {Rate: 5, Goodput: 100}, {Rate: 20, Goodput: 50}}
	if k, _ := Knee(tie); k.Rate != 5 {
		t.Errorf("Knee(tie) = %+v, want the lower rate 5", k)
	}
	if _, err := Knee(nil); err == nil {
		t.Error("Knee(nil) = nil error, want one")
	}
}

func TestHourlyCost(t *testing.T) {
	cases := []struct {
		name string
		p    Pricing
		gpus int
		want float64
		err  string
	}{
		{"per GPU", Pricing{PerGPUHour: 2.75}, 4, 11, ""},
		{"node share", Pricing{PerNodeHour: 88, NodeGPUs: 8}, 1, 11, ""},
		{"whole node", Pricing{PerNodeHour: 88, NodeGPUs: 8}, 8, 88, ""},
		{"no GPU", Pricing{PerGPUHour: 2.75}, 0, 0, "target holds 0 GPUs; its cost is unknown"},
		{"no price", Pricing{}, 1, 0, "no price set"},
		{"both prices", Pricing{PerGPUHour: 1, PerNodeHour: 8, NodeGPUs: 8}, 1, 0, "set a price per GPU-hour or per node-hour, not both"},
		{"negative", Pricing{PerGPUHour: -1}, 1, 0, "prices must not be negative"},
		{"node without GPU count", Pricing{PerNodeHour: 88}, 1, 0, "a node price needs the node's GPU count, got 0"},
		{"more than the node", Pricing{PerNodeHour: 88, NodeGPUs: 8}, 9, 0, "target holds 9 GPUs, more than the node's 8"},
	}
	for _, c := range cases {
		got, err := HourlyCost(c.p, c.gpus)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != c.err || !near(got, c.want) {
			t.Errorf("%s: HourlyCost = %v, %q; want %v, %q", c.name, got, gotErr, c.want, c.err)
		}
	}
}
