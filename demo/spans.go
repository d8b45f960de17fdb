package demo

import (
	"context"
	"net/netip"
	"time"

	"github.com/goodput-exporter/goodput-exporter/otlp"
	"github.com/goodput-exporter/goodput-exporter/sim"
)

// feedSpans hands the daemon's OTLP receiver, every interval, the
// llm_request spans of the requests each simulated vLLM engine finished
// since the last time, as vLLM started with --otlp-traces-endpoint and
// OTEL_SERVICE_NAME set to the target's name would send them. SGLang sends
// no such span.
func feedSpans(ctx context.Context, f *Farm, recv *otlp.Receiver, every time.Duration) {
	last := make([]time.Duration, len(f.Engines))
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for i, en := range f.Engines {
			if en.Format != sim.FormatVLLM {
				continue
			}
			var recs []sim.Record
			var epoch time.Time
			en.srv.Do(func(e *sim.Engine) {
				now := e.Now()
				recs = e.Truth().Records(last[i], now)
				last[i] = now
				// The engine's virtual now is the wall clock's now: its
				// spans end in the past, as a real engine's do.
				epoch = time.Now().Add(-now)
			})
			if len(recs) > 0 {
				recv.Consume(netip.Addr{}, sim.Spans(recs, sim.SpanOptions{Service: en.Name, Epoch: epoch}))
			}
		}
	}
}
