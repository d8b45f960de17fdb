package sim

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type families map[string]*dto.MetricFamily

func parseText(t *testing.T, text string) families {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not valid text exposition: %v", err)
	}
	return fams
}

// fixture reads captures; a family takes its first file's version.
func fixture(t *testing.T, names ...string) families {
	t.Helper()
	out := families{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for k, mf := range parseText(t, string(b)) {
			if _, ok := out[k]; !ok {
				out[k] = mf
			}
		}
	}
	return out
}

func labelKeys(mf *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func bounds(mf *dto.MetricFamily) []float64 {
	var out []float64
	for _, b := range mf.GetMetric()[0].GetHistogram().GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			out = append(out, b.GetUpperBound())
		}
	}
	return out
}

func value(t *testing.T, fams families, name string, labels ...string) float64 {
	t.Helper()
	mf, ok := fams[name]
	if !ok {
		t.Fatalf("family %s missing", name)
	}
	var sum float64
	found := false
	for _, m := range mf.GetMetric() {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			has := false
			for _, l := range m.GetLabel() {
				has = has || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
			}
			match = match && has
		}
		if !match {
			continue
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if !found {
		t.Fatalf("%s%v: no such series", name, labels)
	}
	return sum
}

// compareToFixture checks every family we emit against the engine's own
// exposition: it exists there, with the same type, HELP text, label keys
// (less the ones ignore names) and bucket bounds.
func compareToFixture(t *testing.T, ours, want families, ignore ...string) {
	t.Helper()
	for name, mf := range ours {
		ref, ok := want[name]
		if !ok {
			t.Errorf("%s: not in the engine's exposition", name)
			continue
		}
		// An excerpt without its TYPE line parses as untyped.
		if ref.GetType() != dto.MetricType_UNTYPED && mf.GetType() != ref.GetType() {
			t.Errorf("%s: type %s, engine has %s", name, mf.GetType(), ref.GetType())
		}
		if ref.Help != nil && mf.GetHelp() != ref.GetHelp() {
			t.Errorf("%s: HELP %q, engine has %q", name, mf.GetHelp(), ref.GetHelp())
		}
		refKeys := slices.DeleteFunc(labelKeys(ref), func(k string) bool { return slices.Contains(ignore, k) })
		got := labelKeys(mf)
		if name == "DCGM_FI_DEV_POWER_MGMT_LIMIT" {
			// Only a 2024 capture shows it, from before pci_bus_id existed.
			got = slices.DeleteFunc(got, func(k string) bool { return k == "pci_bus_id" })
		}
		if !slices.Equal(got, refKeys) {
			t.Errorf("%s: label keys %v, engine has %v", name, got, refKeys)
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM && !slices.Equal(bounds(mf), bounds(ref)) {
			t.Errorf("%s: buckets %v, engine has %v", name, bounds(mf), bounds(ref))
		}
	}
}

// busyEngine has run through preemption so that every counter moved.
func busyEngine(t *testing.T, mod func(*Config)) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Scenario, _ = ParseScenario("healthy:10s,kv_preemption:40s,healthy")
	if mod != nil {
		mod(&cfg)
	}
	e := mustNew(t, cfg)
	e.AdvanceTo(time.Minute)
	return e
}

func text(t *testing.T, e *Engine, f Format) string {
	t.Helper()
	var b strings.Builder
	if err := e.WriteMetrics(&b, f); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestVLLMExposition(t *testing.T) {
	// The fixture's engine ran with max_model_len 8192, which sets the
	// token-count buckets.
	e := busyEngine(t, func(c *Config) { c.Model.MaxModelLen = 8192 })
	ours := parseText(t, text(t, e, FormatVLLM))
	compareToFixture(t, ours, fixture(t, "v1-latest-from-source.prom", "v1-kops-conformance-2026-03-qwen2.5-0.5b.prom"))
	for _, name := range []string{
		"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds", "vllm:request_time_per_output_token_seconds",
		"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:num_requests_running",
		"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total", "vllm:prompt_tokens_total",
		"vllm:generation_tokens_total", "vllm:request_success_total", "vllm:prefix_cache_queries_total",
		"vllm:prefix_cache_hits_total", "process_start_time_seconds", "vllm:cache_config_info",
	} {
		if _, ok := ours[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	if n := len(ours["vllm:request_success_total"].GetMetric()); n != len(FinishReasons) {
		t.Errorf("%d finished_reason series, want all %d pre-created", n, len(FinishReasons))
	}
	st := e.State()
	for _, c := range []struct {
		name string
		want float64
	}{
		{"vllm:num_preemptions_total", float64(st.Counters.Preemptions)},
		{"vllm:generation_tokens_total", float64(st.Counters.GenerationTokens)},
		{"vllm:num_requests_running", float64(st.Running)},
		{"vllm:num_requests_waiting", float64(st.Waiting)},
	} {
		if got := value(t, ours, c.name); got != c.want {
			t.Errorf("%s = %v, engine state says %v", c.name, got, c.want)
		}
	}
	if st.Counters.Preemptions == 0 {
		t.Fatal("the run never preempted; the exposition check is too weak")
	}
	// One ITL observation per generated token after each request's first.
	if itl, want := value(t, ours, "vllm:inter_token_latency_seconds"), value(t, ours, "vllm:generation_tokens_total")-value(t, ours, "vllm:time_to_first_token_seconds"); itl != want {
		t.Errorf("ITL count %v, want generation tokens minus first tokens = %v", itl, want)
	}
	finished := value(t, ours, "vllm:request_success_total")
	for _, h := range []string{"vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds", "vllm:request_time_per_output_token_seconds", "vllm:request_prompt_tokens", "vllm:request_num_preemptions"} {
		if got := value(t, ours, h); got != finished {
			t.Errorf("%s count %v, want one per finished request (%v)", h, got, finished)
		}
	}
	if p, bySource := value(t, ours, "vllm:prompt_tokens_total"), value(t, ours, "vllm:prompt_tokens_by_source_total"); p != bySource {
		t.Errorf("prompt tokens %v, by source %v", p, bySource)
	}
	if value(t, ours, "vllm:prefix_cache_hits_total") > value(t, ours, "vllm:prefix_cache_queries_total") {
		t.Error("more prefix hits than queries")
	}
}

func TestSGLangExposition(t *testing.T) {
	e := busyEngine(t, nil)
	ours := parseText(t, text(t, e, FormatSGLang))
	compareToFixture(t, ours, fixture(t, "sglang-from-source.prom"), "moe_ep_rank")
	recent := fixture(t, "recent-qwen3-14b-grep-excerpt.prom")
	for name, mf := range recent {
		if got, want := labelKeys(ours[name]), labelKeys(mf); !slices.Equal(got, want) {
			t.Errorf("%s: label keys %v, the recent capture has %v", name, got, want)
		}
	}
	if itl, want := value(t, ours, "sglang:inter_token_latency_seconds"), value(t, ours, "sglang:generation_tokens_total")-value(t, ours, "sglang:time_to_first_token_seconds"); itl != want {
		t.Errorf("ITL count %v, want %v", itl, want)
	}
	if got, want := value(t, ours, "sglang:num_retracted_requests_total"), float64(e.State().Counters.Preemptions); got != want || got == 0 {
		t.Errorf("retractions %v, preemptions %v", got, want)
	}
}

func TestLlamaCPPExposition(t *testing.T) {
	e := busyEngine(t, nil)
	body := text(t, e, FormatLlamaCPP)
	ours := parseText(t, body)
	want := fixture(t, "llamacpp-b11669-0.7.0-debian-light-load.prom")
	if got, w := slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(want)); !slices.Equal(got, w) {
		t.Fatalf("families %v, llama-server b11669 has %v", got, w)
	}
	compareToFixture(t, ours, want)
	if strings.Contains(body, "{") {
		t.Error("llama.cpp metrics carry no labels")
	}
	// b11669 counts predicted tokens when a request completes: the
	// simulator's per-request truth, summed over finished requests, is
	// the value (to 6 significant digits), below the tokens generated so
	// far while requests are running.
	var done float64
	if e.Truth().Dropped() > 0 {
		t.Fatal("truth dropped records")
	}
	for _, r := range e.Truth().Records(0, time.Duration(math.MaxInt64)) {
		done += float64(r.OutputTokens)
	}
	c := e.State().Counters
	if got := value(t, ours, "llamacpp:tokens_predicted_total"); math.Abs(got-done) > 5e-6*done || !(done < float64(c.GenerationTokens)) {
		t.Errorf("tokens predicted %v, finished requests' tokens %v, generated so far %v", got, done, c.GenerationTokens)
	}
	if got := value(t, ours, "llamacpp:prompt_tokens_cached_total"); got != float64(c.PromptCached) || got == 0 {
		t.Errorf("cached prompt tokens %v, want %v", got, c.PromptCached)
	}
}

var dcgmLabelPrefix = []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname"}

func TestDCGMExposition(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Scenario, _ = ParseScenario("healthy:20s,gpu_throttling")
	e := mustNew(t, cfg)
	e.AdvanceTo(100 * time.Second)
	var b strings.Builder
	if err := e.WriteGPUMetrics(&b); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	ours := parseText(t, body)
	compareToFixture(t, ours, fixture(t, "dcgm-exporter-k8s-h100-from-source.prom", "issue250-2024-02-v100-excerpts.prom"), "DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod")
	keyRE := regexp.MustCompile(`([A-Za-z_]+)="`)
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var keys []string
		for _, m := range keyRE.FindAllStringSubmatch(line[:strings.IndexByte(line, '}')], -1) {
			keys = append(keys, m[1])
		}
		if !slices.Equal(keys[:len(dcgmLabelPrefix)], dcgmLabelPrefix) {
			t.Fatalf("label order %v, dcgm-exporter writes %v first: %s", keys, dcgmLabelPrefix, line)
		}
	}
	if v := value(t, ours, "DCGM_EXP_CLOCK_EVENTS_COUNT", "clock_event", "sw_thermal"); v == 0 {
		t.Error("no sw_thermal clock events after a cooling failure")
	}
	if v := value(t, ours, "DCGM_FI_DEV_SM_CLOCK"); v >= cfg.GPU.MaxSMClockMHz {
		t.Errorf("SM clock %v at full speed while throttled", v)
	}
}

// The energy counter and the power gauge agree: the counter's increase
// over a second is the average power over that second.
func TestDCGMEnergyMatchesPower(t *testing.T) {
	e := mustNew(t, DefaultConfig())
	read := func(at time.Duration) families {
		e.AdvanceTo(at)
		var b strings.Builder
		if err := e.WriteGPUMetrics(&b); err != nil {
			t.Fatal(err)
		}
		return parseText(t, b.String())
	}
	for s := 5; s < 15; s++ {
		a, b := read(sec(s)), read(sec(s+1))
		de := value(t, b, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION") - value(t, a, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
		if p := value(t, b, "DCGM_FI_DEV_POWER_USAGE"); math.Abs(de-1000*p) > 2 {
			t.Fatalf("second %d: energy rose %v mJ, power says %v W", s+1, de, p)
		}
	}
	if p := value(t, read(sec(20)), "DCGM_FI_DEV_POWER_USAGE"); p <= DefaultConfig().GPU.IdlePowerW {
		t.Errorf("a loaded GPU draws %v W, no more than idle", p)
	}
}

// DCGM_FI_DEV_MAX_SM_CLOCK is exported only when asked for, as
// dcgm-exporter does only with the field in its counters file; its value
// is the GPU's maximum SM clock (1980 MHz in DefaultConfig, an H100 SXM).
func TestDCGMMaxSMClockOnRequest(t *testing.T) {
	for _, on := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.GPU.ExportMaxSMClock = on
		e := mustNew(t, cfg)
		e.AdvanceTo(10 * time.Second)
		var b strings.Builder
		if err := e.WriteGPUMetrics(&b); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(b.String(), "\nDCGM_FI_DEV_MAX_SM_CLOCK{")
		if has != on {
			t.Fatalf("ExportMaxSMClock %v: field exported %v", on, has)
		}
		if on {
			if v := value(t, parseText(t, b.String()), "DCGM_FI_DEV_MAX_SM_CLOCK"); v != 1980 {
				t.Errorf("DCGM_FI_DEV_MAX_SM_CLOCK = %v, want 1980", v)
			}
		}
	}
}
