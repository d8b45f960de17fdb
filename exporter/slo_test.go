package exporter

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/goodput-exporter/goodput-exporter/collector"
	"github.com/goodput-exporter/goodput-exporter/goodput"
	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

func TestBucketFlagsPerEngine(t *testing.T) {
	advice := map[string][]float64{"time_to_first_token": {0.1, 0.2, 0.3, 0.4}, "inter_token_latency": {0.025, 0.04, 0.05}}
	if got, want := bucketFlags(snapshot.VLLM, advice), `--custom-histogram-buckets '{"inter_token_latency":[0.025,0.04,0.05],"time_to_first_token":[0.1,0.2,0.3,0.4]}'`; got != want {
		t.Errorf("vllm: %s\nwant %s", got, want)
	}
	if got, want := bucketFlags(snapshot.SGLang, advice), "--bucket-inter-token-latency 0.025 0.04 0.05 --bucket-time-to-first-token 0.1 0.2 0.3 0.4"; got != want {
		t.Errorf("sglang: %s\nwant %s", got, want)
	}
	for _, e := range []snapshot.Engine{snapshot.TGI, snapshot.Triton, snapshot.TRTLLM, snapshot.Dynamo} {
		if got := bucketFlags(e, advice); got != "" {
			t.Errorf("%s has no bucket flag, got %s", e, got)
		}
	}
}

// tpot judged per token while the engine has no per-request TPOT
// histogram (it creates it late): the tokens go to llm_slo_tokens_total,
// the tpot request count stays within the finished requests,
// llm_slo_supported says fallback="true" and then "false", and both
// switches are logged.
func TestTPOTFallbackSeriesAndLog(t *testing.T) {
	slos := []goodput.SLO{{Name: "chat", Objectives: []goodput.Objective{{Kind: goodput.KindTPOT, Threshold: 0.05, Target: 0.9}}}}
	itlBounds := []float64{0.025, 0.05, 0.1}
	// n requests of 100 tokens at 40 ms a token: 99 gaps each.
	model := func(n float64, tpot bool) snapshot.Model {
		m := snapshot.Model{Name: "m"}
		m.Hists[snapshot.ITL] = &snapshot.Histogram{Bounds: itlBounds, Cumulative: []float64{0, 99 * n, 99 * n}, Count: 99 * n}
		m.HistSource[snapshot.ITL] = "vllm:inter_token_latency_seconds"
		m.Hists[snapshot.E2E] = &snapshot.Histogram{Bounds: []float64{10}, Cumulative: []float64{n}, Count: n}
		m.HistSource[snapshot.E2E] = "vllm:e2e_request_latency_seconds"
		if tpot {
			m.Hists[snapshot.TPOT] = &snapshot.Histogram{Bounds: itlBounds, Cumulative: []float64{0, n, n}, Count: n}
			m.HistSource[snapshot.TPOT] = "vllm:request_time_per_output_token_seconds"
		}
		return m
	}
	tr := goodput.NewTracker("t", slos)
	d := newSLODescs(nil)
	var notes sloNotes
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	read := func() map[string]float64 {
		var sink collector.ConstSink
		d.emit(&sink, tr, snapshot.VLLM)
		out := map[string]float64{}
		for _, m := range sink {
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			name := m.Desc().String()
			name = name[strings.Index(name, `fqName: "`)+9:]
			name = name[:strings.Index(name, `"`)]
			for _, l := range pb.GetLabel() {
				if l.GetName() == "fallback" {
					name += "{fallback=" + l.GetValue() + "}"
				}
			}
			out[name] = pb.GetCounter().GetValue() + pb.GetGauge().GetValue()
		}
		return out
	}
	for i, s := range []struct {
		n    float64
		tpot bool
		want map[string]float64
	}{
		{0, false, map[string]float64{"llm_slo_supported{fallback=true}": 1, "llm_slo_requests_total": 0}},
		{1, false, map[string]float64{"llm_slo_supported{fallback=true}": 1, "llm_slo_requests_total": 0, "llm_slo_tokens_total": 99, "llm_slo_good_tokens_total": 99}},
		{3, true, map[string]float64{"llm_slo_supported{fallback=false}": 1, "llm_slo_requests_total": 3, "llm_slo_tokens_total": 99}},
		{4, true, map[string]float64{"llm_slo_supported{fallback=false}": 1, "llm_slo_requests_total": 4, "llm_slo_good_requests_total": 4, "llm_slo_tokens_total": 99}},
	} {
		snap := &snapshot.Snapshot{Target: "t", Engine: snapshot.VLLM, Time: time.Unix(int64(5*i), 0), Models: []snapshot.Model{model(s.n, s.tpot)}}
		if err := tr.Update(snap); err != nil {
			t.Fatal(err)
		}
		notes.check(logger, tr, snap, slos)
		got := read()
		for k, v := range s.want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("snapshot %d (%v requests, TPOT histogram %v): %s = %v (present %v), want %v", i, s.n, s.tpot, k, g, ok, v)
			}
		}
		if got["llm_slo_requests_total"] > s.n {
			t.Errorf("snapshot %d: %v tpot requests judged, more than the %v finished", i, got["llm_slo_requests_total"], s.n)
		}
	}
	if l := logs.String(); strings.Count(l, "tpot judged per token") != 1 || strings.Count(l, "tpot judged per request again") != 1 {
		t.Errorf("want one log line for each switch; got:\n%s", l)
	}
}
