package sim

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The sweep shows the knee: goodput follows throughput at low rates, then
// falls while throughput plateaus, as in the DESIGN's field sweep.
func TestSweepShowsTheKnee(t *testing.T) {
	var edges []SweepEdge
	var scraped []string
	pts, err := Sweep(context.Background(), SweepConfig{
		Base:       DefaultConfig(),
		Rates:      []float64{4, 8, 12, 16, 20, 24, 28, 32},
		Step:       40 * time.Second,
		Thresholds: Thresholds{TTFT: 500 * time.Millisecond},
		OnEdge: func(step int, rate float64, edge SweepEdge, e *Engine) error {
			edges = append(edges, edge)
			var b strings.Builder
			if err := e.WriteMetrics(&b, FormatVLLM); err != nil {
				return err
			}
			scraped = append(scraped, b.String())
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		t.Logf("rate %4.0f  ttft p99 %7v  throughput %5.0f tok/s  goodput %5.0f tok/s", p.Rate, p.TTFTP99.Round(time.Millisecond), p.Throughput, p.Goodput)
	}
	if len(edges) != 2*len(pts) || edges[0] != StepStart || edges[1] != StepEnd || scraped[0] == scraped[1] {
		t.Fatalf("edges %v: want a start and an end per step, with the engine moving between", edges)
	}
	peak := 0
	for i, p := range pts {
		if p.Goodput > pts[peak].Goodput {
			peak = i
		}
	}
	for _, p := range pts[:2] {
		if p.Goodput < 0.95*p.Throughput {
			t.Errorf("rate %.0f: goodput %.0f of %.0f tok/s below the knee", p.Rate, p.Goodput, p.Throughput)
		}
	}
	last := pts[len(pts)-1]
	if peak == 0 || peak >= len(pts)-2 {
		t.Fatalf("goodput peaks at rate %.0f, want a knee inside the sweep", pts[peak].Rate)
	}
	if last.Goodput > 0.5*pts[peak].Goodput {
		t.Errorf("goodput %.0f at the top rate vs %.0f at the knee, want a fall", last.Goodput, pts[peak].Goodput)
	}
	if prev := pts[len(pts)-2]; last.Throughput < 0.9*pts[peak].Throughput || last.Throughput > 1.1*prev.Throughput {
		t.Errorf("throughput %.0f, %.0f at the top rates vs %.0f at the knee, want a plateau", prev.Throughput, last.Throughput, pts[peak].Throughput)
	}
	if last.TTFTP99 < 10*pts[0].TTFTP99 {
		t.Errorf("TTFT p99 %v at the top rate vs %v at the bottom, want queueing", last.TTFTP99, pts[0].TTFTP99)
	}
}

func TestSweepErrors(t *testing.T) {
	if _, err := Sweep(context.Background(), SweepConfig{Base: DefaultConfig()}); err == nil {
		t.Error("a sweep without rates ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Sweep(ctx, SweepConfig{Base: DefaultConfig(), Rates: []float64{1}, Step: time.Second}); err != context.Canceled {
		t.Errorf("cancelled sweep: %v", err)
	}
}
