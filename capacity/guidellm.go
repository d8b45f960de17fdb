package capacity

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// GuideLLM's benchmarks report (`guidellm benchmark --output-path
// benchmarks.json|.yaml`), as written by v0.3 (benchmarks[].args.strategy)
// and v0.4/v0.5 (benchmarks[].config.strategy): each benchmark holds its
// strategy's rate, metrics as status distribution summaries (successful.
// mean/median/percentiles.pNN) and, unless sampled away, the successful,
// incomplete and errored requests with their own timings.
type guideReport struct {
	Benchmarks []guideBenchmark `json:"benchmarks"`
}

type guideBenchmark struct {
	Config   *guideConfig `json:"config"` // v0.4+
	Args     *guideConfig `json:"args"`   // v0.3
	Duration *float64     `json:"duration"`
	Start    *float64     `json:"start_time"`
	End      *float64     `json:"end_time"`
	Metrics  map[string]struct {
		Successful *guideDist `json:"successful"`
	} `json:"metrics"`
	Requests *struct {
		Successful []guideRequest `json:"successful"`
		Incomplete []guideRequest `json:"incomplete"`
		Errored    []guideRequest `json:"errored"`
	} `json:"requests"`
}

type guideConfig struct {
	Strategy struct {
		Type string   `json:"type_"`
		Rate *float64 `json:"rate"`
	} `json:"strategy"`
}

type guideDist struct {
	Mean        *float64           `json:"mean"`
	Median      *float64           `json:"median"`
	Percentiles map[string]float64 `json:"percentiles"`
}

type guideRequest struct {
	TTFTms       *float64 `json:"time_to_first_token_ms"`
	ITLms        *float64 `json:"inter_token_latency_ms"`
	Latency      *float64 `json:"request_latency"` // seconds
	OutputTokens *float64 `json:"output_tokens"`
	OutputUsage  *struct {
		TextTokens *float64 `json:"text_tokens"`
	} `json:"output_metrics"`
}

// guidePct maps GuideLLM's percentile keys to percentiles.
var guidePct = map[string]float64{"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}

func yamlToJSON(b []byte) ([]byte, error) {
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func ms(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p / 1000
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func parseGuideLLM(body []byte) ([]Point, error) {
	var rep guideReport
	if err := json.Unmarshal(body, &rep); err != nil {
		return nil, fmt.Errorf("GuideLLM report: %w", err)
	}
	if len(rep.Benchmarks) == 0 {
		return nil, errors.New("GuideLLM report holds no benchmarks")
	}
	out := make([]Point, 0, len(rep.Benchmarks))
	for i, b := range rep.Benchmarks {
		what := fmt.Sprintf("benchmark %d", i+1)
		cfg := b.Config
		if cfg == nil {
			cfg = b.Args
		}
		var p Point
		if cfg != nil && cfg.Strategy.Rate != nil {
			p.Rate = *cfg.Strategy.Rate
		} else if m := b.Metrics["requests_per_second"].Successful; m != nil && m.Mean != nil {
			// synchronous and throughput strategies have no set rate:
			// the achieved one stands for it
			p.Rate = *m.Mean
		}
		if m := b.Metrics["output_tokens_per_second"].Successful; m != nil && m.Mean != nil {
			p.Throughput = *m.Mean
		} else {
			return nil, fmt.Errorf("%s: no metrics.output_tokens_per_second.successful.mean", what)
		}
		switch {
		case b.Duration != nil:
			p.Duration = *b.Duration
		case b.Start != nil && b.End != nil:
			p.Duration = *b.End - *b.Start
		}
		// GuideLLM's time_per_output_token_ms counts the first token;
		// its inter_token_latency_ms is the mean gap after it, which is
		// what tpot means here (vLLM's definition), and per request what
		// itl is judged on.
		for name, kind := range map[string]goodput.Kind{
			"time_to_first_token_ms": goodput.KindTTFT, "inter_token_latency_ms": goodput.KindITL,
			"request_latency": goodput.KindE2E,
		} {
			d := b.Metrics[name].Successful
			if d == nil {
				continue
			}
			scale := 1e-3
			if kind == goodput.KindE2E {
				scale = 1 // GuideLLM's request_latency is in seconds
			}
			kinds := []goodput.Kind{kind}
			if kind == goodput.KindITL {
				kinds = append(kinds, goodput.KindTPOT)
			}
			for _, kind := range kinds {
				if d.Median != nil {
					p.setPct(kind, 50, *d.Median*scale)
				}
				for k, v := range d.Percentiles {
					if pct, ok := guidePct[k]; ok {
						p.setPct(kind, pct, v*scale)
					}
				}
			}
		}
		if r := b.Requests; r != nil && len(r.Successful)+len(r.Errored)+len(r.Incomplete) > 0 {
			p.Requests = make([]Request, 0, len(r.Successful)+len(r.Errored)+len(r.Incomplete))
			for _, q := range r.Successful {
				tok := orNaN(q.OutputTokens)
				if q.OutputTokens == nil && q.OutputUsage != nil {
					tok = orNaN(q.OutputUsage.TextTokens)
				}
				p.Requests = append(p.Requests, Request{TTFT: ms(q.TTFTms), TPOT: ms(q.ITLms), ITL: ms(q.ITLms),
					E2E: orNaN(q.Latency), OutputTokens: tok})
			}
			for range len(r.Errored) + len(r.Incomplete) {
				p.Requests = append(p.Requests, Request{TTFT: math.NaN(), TPOT: math.NaN(), ITL: math.NaN(), E2E: math.NaN(), Failed: true})
			}
		}
		if err := checkPoint(&p, what); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
