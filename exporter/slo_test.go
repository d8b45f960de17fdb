package exporter

import (
	"testing"

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
