package mixin

import (
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Possible's logic on hand-made queries: "or" takes the better side,
// "unless" its left, everything else the worse of its parts; recorded
// series are followed into their rules.
func TestPossible(t *testing.T) {
	c := Default()
	leaf := func(name string, _ []*labels.Matcher) Tri {
		return map[string]Tri{"yes": Yes, "no": No, "maybe": Maybe}[name]
	}
	for _, tc := range []struct {
		q    string
		want Tri
	}{
		{"yes", Yes}, {"no", No}, {"maybe or no", Maybe}, {"no or yes", Yes},
		{"yes / (no > 0)", No}, {"sum by (target) (rate(maybe[5m])) * yes", Maybe},
		{"yes unless no", Yes}, {"no unless yes", No},
		{"count(no) or vector(0)", Yes}, {`{__name__=~"no|maybe"}`, Maybe},
		{`histogram_quantile(0.99, sum by (le) (rate(no[5m])))`, No},
	} {
		got, err := c.Possible(tc.q, leaf)
		if err != nil || got != tc.want {
			t.Errorf("Possible(%s) = %v, %v; want %v", tc.q, got, err, tc.want)
		}
	}
	// A recorded series: the fleet's generation tokens come from
	// llm_generation_tokens_total, which Triton does not export.
	if got, _ := c.Possible(`model:llm_generation_tokens:rate5m`, EngineLeaf(snapshot.Triton)); got != No {
		t.Errorf("model:llm_generation_tokens:rate5m on triton: %v, want no", got)
	}
	if got, _ := c.Possible(`model:llm_generation_tokens:rate5m`, EngineLeaf(snapshot.TGI)); got != Yes {
		t.Errorf("model:llm_generation_tokens:rate5m on tgi: %v, want yes", got)
	}
}

// The texts of three panels, against the support matrix of docs/metrics.md read by
// hand: preemptions only from vLLM and SGLang; the KV gauge from every
// engine but Dynamo, and from llama.cpp only before PR #13660; TTFT's
// p99 not from llama.cpp or TGI; the engines' queue from every engine.
func TestPanelNoValueFromSupportMatrix(t *testing.T) {
	texts := map[string]string{}
	for _, d := range Default().Dashboards() {
		if d.UID != "goodput-overview" {
			continue
		}
		for _, r := range d.Rows {
			for _, p := range r.Panels {
				texts[p.Title] = p.NoValue
			}
		}
	}
	for title, want := range map[string]string{
		"Preemptions per second":  "Unsupported, so no data: for dynamo, llamacpp, tgi, triton, trtllm, whose engines",
		"KV-cache usage":          "Unsupported, so no data: for dynamo, whose engines do not export what it reads (docs/metrics.md, support matrix); for current llamacpp versions, which removed",
		"TTFT p99":                "Unsupported, so no data: for llamacpp, tgi, whose",
		"Queue and running batch": "",
	} {
		got, ok := texts[title]
		if !ok || !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("%s: %q, want %q…", title, got, want)
		}
	}
}
