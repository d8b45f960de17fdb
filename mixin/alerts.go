package mixin

import (
	"fmt"
	"strings"
)

// Runbook is the body of docs/runbooks/<alert>.md.
type Runbook struct {
	Meaning  string
	Confirm  []Query // PromQL, with <label> placeholders for the alert's labels
	Remedies []string
}

// Query is a PromQL query and what it shows.
type Query struct{ What, Expr string }

func (c Config) alert(name, expr, forDur, severity, summary, description string, rb *Runbook) Rule {
	return Rule{Alert: name, Expr: strings.TrimSpace(expr) + "\n", For: forDur,
		Labels: map[string]string{"severity": severity},
		Annotations: map[string]string{"summary": summary, "description": c.inCluster() + description,
			"runbook_url": c.runbook(name)},
		Runbook: rb}
}

// where is "target <target> on <instance>" for descriptions.
const where = `{{ $labels.target }} on {{ $labels.instance }}`

// ph is a selector of the alert's labels as runbook placeholders.
func (c Config) ph(metric string, labels ...string) string {
	var m []string
	for _, l := range labels {
		m = append(m, fmt.Sprintf(`%s="<%s>"`, l, l))
	}
	return c.sel(metric, m...)
}

// BurnAlertName is LLMErrorBudgetBurn<long window>.
func BurnAlertName(b BurnAlert) string { return "LLMErrorBudgetBurn" + b.Long }

func (c Config) burnAlerts() []Rule {
	var out []Rule
	key := c.by("target", "model", "slo", "objective")
	for _, b := range c.BurnAlerts {
		f := ftoa(b.Factor)
		// The short window is met either by its own burn rate or, while
		// the engine is down, by having judged nothing at all: an engine
		// that is hard down must not "heal" its SLO because its traffic
		// (and so its attainment) vanished.
		expr := fmt.Sprintf(`%[1]s > %[3]s
and
(
  %[2]s > %[3]s
  or
  (
    %[1]s
      unless on (%[4]s) %[5]s
  )
    and on (%[6]s) (%[7]s == 0)
)`, sloBurn(b.Long), sloBurn(b.Short), f, key, sloAttainment(b.Short), c.by("target"), c.sel("llm_up"))
		sev := "page"
		if b.Severity != c.PageSeverity {
			sev = "ticket"
		}
		out = append(out, c.alert(BurnAlertName(b), expr, b.For, b.Severity,
			fmt.Sprintf("SLO %s of %s burns its %s error budget %s× too fast ({{ $labels.target }}).",
				"{{ $labels.slo }}/{{ $labels.objective }}", "{{ $labels.model }}", c.BudgetPeriod, f),
			fmt.Sprintf("Objective {{ $labels.objective }} of SLO {{ $labels.slo }} for {{ $labels.model }} on %s: "+
				"the error budget burned {{ $value | humanize }}× the rate a %s budget allows over the last %s "+
				"(%s = {{ $value | humanize }}), and more than %s× over the last %s too (or the engine is down and judged nothing). "+
				"At %s× the whole %s budget is gone in %s.",
				where, c.BudgetPeriod, b.Long, sloBurn(b.Long), f, b.Short, f, c.BudgetPeriod,
				budgetGone(c.BudgetPeriod, b.Factor)),
			&Runbook{
				Meaning: fmt.Sprintf("The share of requests that missed the objective, over both the last %s and the last %s, "+
					"is more than %s times the share the SLO's target allows (1 - target). Spent at this pace the %s "+
					"error budget lasts %s: this is a %s. Each node's daemon exports its own SLO targets "+
					"(`llm_slo_target_ratio`), and the burn rate of a target uses the target ratio of the daemon that "+
					"scrapes it, so nodes with different objectives are each judged against their own.",
					b.Long, b.Short, f, c.BudgetPeriod, budgetGone(c.BudgetPeriod, b.Factor), sev),
				Confirm: []Query{
					{"Burn rate over the long and short windows (over 1 spends the budget faster than the SLO period allows)",
						c.ph(sloBurn(b.Long), "instance", "target", "slo", "objective") + "\n" +
							c.ph(sloBurn(b.Short), "instance", "target", "slo", "objective")},
					{"Attainment over the long window, and the daemon's target for it",
						c.ph(sloAttainment(b.Long), "instance", "target", "slo", "objective") + "\n" +
							c.ph("llm_slo_target_ratio", "instance", "slo", "objective")},
					{"Is the engine up, and which failure mode does the classifier name?",
						c.ph("llm_up", "instance", "target") + "\n" +
							c.ph("llm_failure_mode", "instance", "target") + " == 1"},
					{"Where the time goes: TTFT and queue time p99 on the target",
						fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[5m])))",
							c.ph("llm_time_to_first_token_seconds_bucket", "instance", "target")) + "\n" +
							fmt.Sprintf("histogram_quantile(0.99, sum by (le) (rate(%s[5m])))",
								c.ph("llm_request_queue_time_seconds_bucket", "instance", "target"))},
				},
				Remedies: []string{
					"If `llm_up` is 0, the engine is down: follow LLMEngineDown first.",
					"If a failure-mode alert fires for the same target, follow its runbook: it names the cause and its remedy.",
					"If the whole model is affected on every node (compare `" + sloBurn(b.Long) + "` across targets), the fleet lacks capacity: scale out, or shed load.",
					"If one node alone burns, drain it from the load balancer and compare its configuration (SLO thresholds, engine flags, GPU) with a healthy node.",
					"If the objective itself is wrong for the traffic, change the SLO in the daemon's configuration; do not silence the alert.",
				},
			}))
	}
	return out
}

// budgetGone is period / factor, written for people.
func budgetGone(period string, factor float64) string {
	h := parseDuration(period).Hours() / factor
	if h < 48 {
		return fmt.Sprintf("about %s hours", ftoa(float64(int(h*10+0.5))/10))
	}
	return fmt.Sprintf("about %s days", ftoa(float64(int(h/24*10+0.5))/10))
}

func (c Config) failureModeAlerts() []Rule {
	var out []Rule
	for _, mode := range FailureModes {
		info := c.modeInfo(mode)
		sev := c.FailureModeSeverity[mode]
		if sev == "" {
			sev = c.TicketSeverity
		}
		name := "LLM" + camel(mode)
		confirm := append([]Query{{"The verdict, and whether the target can be judged for this mode",
			c.ph("llm_failure_mode", "instance", "target") + "\n" + c.sel("llm_failure_mode_supported", `mode="`+mode+`"`)}},
			info.confirm...)
		expr := c.sel("llm_failure_mode", `mode="`+mode+`"`) + " == 1"
		if mode == "engine_stall" {
			// A target that does not answer is LLMEngineDown's page; the
			// classifier names it engine_stall too, which would page twice
			// for one killed engine.
			expr += fmt.Sprintf("\nunless on (%s)\n  %s == 0", c.by("target"), c.sel("llm_up"))
		}
		out = append(out, c.alert(name, expr, c.FailureModeFor(), sev,
			fmt.Sprintf("%s on %s.", info.summary, where),
			fmt.Sprintf("The failure-mode classifier names %s for %s (engine {{ $labels.engine }}, %s): "+
				"llm_failure_mode{mode=%q} = 1, raised after %s, each over the trailing %s window %s; "+
				"the daemon judges once per collection cycle. It clears after %d consecutive clean judgements. Evidence now: %s.",
				mode, where, c.modelsOfTarget(), mode, c.raisedAfter(mode), promDuration(c.DiagnosisWindow), info.evidence, c.DiagnosisLeave,
				c.evidenceText(c.modeEvidence(mode))),
			&Runbook{Meaning: info.meaning + fmt.Sprintf(" The classifier judges the trailing %s window once per collection cycle (`--collect.interval`) and raises the mode after %s; "+
				"the alert waits one more window (for: %s) and resolves when the classifier clears the mode after %d clean judgements in a row.",
				promDuration(c.DiagnosisWindow), c.raisedAfter(mode), c.FailureModeFor(), c.DiagnosisLeave),
				Confirm: confirm, Remedies: info.remedies}))
	}
	return out
}

// An evidence item of a failure-mode alert: a value read when the alert
// is sent, by a query template over the alert's daemon and target.
type evidence struct {
	what  string
	query string // PromQL with %[1]q for the instance, %[2]q for the target
	unit  string // "", "%" (a ratio shown as a percentage), or a unit after the value
}

// onTarget is a selector of metric on the alert's instance and target,
// for a query template (printf with the instance and the target).
func (c Config) onTarget(metric string) string {
	return c.sel(metric, "instance=%[1]q", "target=%[2]q")
}

// evidenceText renders the items as "what value, what value": each value
// read by Prometheus' template function query when the alert is sent,
// "n/a" where the series does not exist.
func (c Config) evidenceText(items []evidence) string {
	var parts []string
	for _, e := range items {
		format, unit := "humanize", ""
		switch e.unit {
		case "%":
			format = "humanizePercentage"
		case "s":
			format = "humanizeDuration"
		case "":
		case "req/s":
			format, unit = `printf "%.3g"`, " "+e.unit
		default:
			unit = " " + e.unit
		}
		parts = append(parts, fmt.Sprintf("%s {{ with printf `%s` $labels.instance $labels.target | query }}{{ . | first | value | %s }}%s{{ else }}n/a{{ end }}",
			e.what, e.query, format, unit))
	}
	return strings.Join(parts, ", ")
}

// SignalEvidence names the evidence items of a failure mode's
// description that are read from the classifier's llm_signal_* gauges,
// as they appear in it ("<name> <value>").
func (c Config) SignalEvidence(mode string) []string {
	var out []string
	for _, e := range c.modeEvidence(mode) {
		if strings.Contains(e.query, "llm_signal_") {
			out = append(out, e.what)
		}
	}
	return out
}

// modelsOfTarget names the models the alert's target serves: the
// classifier judges a target as a whole, so a failure mode concerns every
// model on it ("all models" where none is known).
func (c Config) modelsOfTarget() string {
	q := fmt.Sprintf("group by (model) (%s or %s)", c.onTarget("llm_requests_running"), c.onTarget("llm_generation_tokens_total"))
	return fmt.Sprintf("{{ with printf `%s` $labels.instance $labels.target | query }}model {{ range $i, $s := . }}{{ if $i }}, {{ end }}{{ $s.Labels.model }}{{ end }}{{ else }}all models{{ end }}", q)
}

// modeEvidence is what each failure mode's page shows: the classifier's
// llm_signal_* gauges that its rule compares, and the engine's own
// gauges next to them.
func (c Config) modeEvidence(mode string) []evidence {
	sum := func(m string) string { return "sum(" + c.onTarget(m) + ")" }
	sig := func(m string) string { return "max(" + c.onTarget(m) + ")" }
	rate := func(m string) string { return "sum(rate(" + c.onTarget(m) + "[1m]))" }
	waiting := evidence{"waiting", sum("llm_requests_waiting"), ""}
	running := evidence{"running", sum("llm_requests_running"), ""}
	ceiling := evidence{"of a batch ceiling of", sig("llm_signal_running_ceiling"), ""}
	kv := evidence{"KV cache", "max(" + c.onTarget("llm_kv_cache_usage_ratio") + ")", "%"}
	switch mode {
	case "queue_growth":
		return []evidence{{"waiting queue growing by", sig("llm_signal_waiting_slope"), "req/s"},
			{"against a bar of", sig("llm_signal_waiting_slope_threshold"), "req/s"}, waiting,
			{"against a bar of", sig("llm_signal_waiting_threshold"), ""}, running, ceiling, kv}
	case "kv_preemption":
		return []evidence{kv, {"preemptions", rate("llm_preemptions_total"), "req/s"}, running,
			{"KV cache per running request", sig("llm_signal_kv_cache_per_running_request"), "%"}}
	case "prefill_interference":
		return []evidence{{"prompt tokens per request", sig("llm_signal_prompt_tokens_per_request"), ""},
			{"against a baseline of", sig("llm_signal_prompt_tokens_per_request_baseline"), ""},
			{"inter-token latency baseline", sig("llm_signal_inter_token_latency_mean_seconds_baseline"), "s"},
			{"waiting queue growing by", sig("llm_signal_waiting_slope"), "req/s"}}
	case "kv_monopoly":
		return []evidence{{"KV cache per running request", sig("llm_signal_kv_cache_per_running_request"), "%"},
			{"against a baseline of", sig("llm_signal_kv_cache_per_running_request_baseline"), "%"}, kv, running, waiting}
	case "prefix_cache_collapse":
		return []evidence{{"prefix-cache hit ratio", rate("llm_prefix_cache_hits_total") + " / " + rate("llm_prefix_cache_queries_total"), "%"},
			{"against a baseline of", sig("llm_signal_prefix_cache_hit_ratio_baseline"), "%"}}
	case "decode_saturation":
		return []evidence{{"share of requests within the decode objective", sig("llm_signal_decode_attainment_ratio"), "%"},
			{"inter-token latency baseline", sig("llm_signal_inter_token_latency_mean_seconds_baseline"), "s"}, running, ceiling, waiting}
	case "gpu_throttling":
		return []evidence{{"share of GPU readings throttled", sig("llm_signal_gpu_throttled_ratio"), "%"},
			{"SM clock against its baseline", sig("llm_signal_gpu_sm_clock_ratio_baseline"), "%"}}
	case "engine_stall":
		return []evidence{{"generation tokens", rate("llm_generation_tokens_total"), "tok/s"},
			{"against a baseline of", sig("llm_signal_generation_tokens_per_second_baseline"), "tok/s"}, running, waiting}
	}
	panic("mixin: unknown mode " + mode)
}

func camel(s string) string {
	var b strings.Builder
	for _, p := range strings.Split(s, "_") {
		switch p {
		case "kv", "gpu":
			b.WriteString(strings.ToUpper(p))
		default:
			b.WriteString(strings.ToUpper(p[:1]) + p[1:])
		}
	}
	return b.String()
}

type modeText struct {
	summary, meaning, evidence string
	confirm                    []Query
	remedies                   []string
}

func (c Config) modeInfo(mode string) modeText {
	t := func(m string) string { return c.ph(m, "instance", "target") }
	rate := func(m string) string { return "sum(rate(" + t(m) + "[5m]))" }
	p99 := func(m string) string {
		return "histogram_quantile(0.99, sum by (le) (rate(" + t(m+"_bucket") + "[5m])))"
	}
	switch mode {
	case "queue_growth":
		return modeText{"Requests queue faster than the engine serves them",
			"More requests arrive than the engine can run: the waiting queue grows while the running batch sits at its ceiling, with no KV pressure and no preemption, or it has filled and stands (behind the clients' concurrency cap) at least a whole batch long with TTFT broken. Time to first token grows with the queue.",
			"(waiting queue growing while the running batch is at its ceiling, no KV pressure, or standing at least a batch ceiling long with TTFT broken; once raised it holds while the queue stands and would not drain within a window)",
			[]Query{{"Waiting and running requests", t("llm_requests_waiting") + "\n" + t("llm_requests_running")},
				{"Queue time p99", p99("llm_request_queue_time_seconds")}},
			[]string{"Scale out: add replicas of the model (past the knee, one replica cannot catch up).",
				"Shed or rate-limit load at the gateway until capacity arrives.",
				"Check the load balancer: one replica may receive more than its share."}}
	case "kv_preemption":
		return modeText{"The KV cache is full and the engine preempts requests",
			"The KV cache is full (usage at or above 0.9 by default) and the engine preempts running requests to make room; preempted requests are recomputed, so inter-token latency jumps and throughput falls while the GPU stays busy.",
			"(KV-cache usage at or above 0.9 and preemptions sustained; once raised it holds while the cache stays at least 0.8 full)",
			[]Query{{"KV-cache usage and preemptions per second", t("llm_kv_cache_usage_ratio") + "\n" + rate("llm_preemptions_total")},
				{"Inter-token latency p99", p99("llm_inter_token_latency_seconds")}},
			[]string{"Lower the concurrency the engine admits (vLLM `--max-num-seqs`, SGLang `--max-running-requests`) or the maximum context.",
				"Give the KV cache more memory: FP8 KV cache, a higher `--gpu-memory-utilization`, or tensor parallelism over more GPUs.",
				"Scale out so each replica holds fewer sequences."}}
	case "prefill_interference":
		return modeText{"Long prompts stall decoding",
			"Prompt length (or prompt tokens per second) jumped against its baseline and the inter-token latency tail broke while the queue is not growing: prefill work of long prompts is interleaved with decoding and slows every running request.",
			"(prompt tokens per request up against the baseline, inter-token latency up, queue flat)",
			[]Query{{"Prompt tokens per second and per request", rate("llm_prompt_tokens_total") + "\n" +
				rate("llm_prompt_tokens_total") + " / " + rate("llm_e2e_request_latency_seconds_count")},
				{"Inter-token latency p99", p99("llm_inter_token_latency_seconds")}},
			[]string{"Lower the chunked-prefill budget (vLLM `--max-num-batched-tokens`, SGLang `--chunked-prefill-size`) so decode steps keep their pace.",
				"Route long prompts to a separate pool of replicas.",
				"Disaggregate prefill and decode where the serving stack supports it."}}
	case "kv_monopoly":
		return modeText{"A few long contexts hold the KV cache",
			"KV-cache usage is high while few requests run and others wait, with no preemption: a few very long contexts hold most of the cache, so throughput and power are low while requests queue.",
			"(KV-cache usage high per running request, requests waiting, no preemption; once raised it holds while requests wait and each running request holds well more of the cache than usual)",
			[]Query{{"KV-cache usage against running and waiting requests", t("llm_kv_cache_usage_ratio") + "\n" +
				t("llm_requests_running") + "\n" + t("llm_requests_waiting")},
				{"Generation tokens per second", rate("llm_generation_tokens_total")}},
			[]string{"Cap `max_tokens` and the maximum context length the gateway accepts.",
				"Give interactive traffic priority over long-context requests.",
				"Serve long contexts from a dedicated pool."}}
	case "prefix_cache_collapse":
		return modeText{"The prefix-cache hit ratio collapsed",
			"The prefix-cache hit ratio fell well under its baseline without overload: prompts that used to share a cached prefix no longer do, so prompt compute and time to first token rise.",
			"(prefix-cache hit ratio well under its baseline, no overload)",
			[]Query{{"Prefix-cache hit ratio (tokens)", rate("llm_prefix_cache_hits_total") + " / " + rate("llm_prefix_cache_queries_total")},
				{"TTFT p99", p99("llm_time_to_first_token_seconds")}},
			[]string{"Restore cache-aware routing or session affinity at the load balancer.",
				"Check for a change of the prompt template or system prompt (a timestamp or request ID at the start of the prompt defeats the cache).",
				"Check that the engine still runs with prefix caching enabled after its last restart."}}
	case "decode_saturation":
		return modeText{"The decode batch is saturated",
			"The running batch is near its ceiling and the inter-token (TPOT) tail is over the SLO while TTFT is fine and the queue is flat: every request decodes slower because the batch is too large.",
			"(decode latency over the objective while TTFT and the queue are fine; once raised it holds while the decode objective stays breached)",
			[]Query{{"Running batch", t("llm_requests_running")},
				{"Inter-token latency and TTFT p99", p99("llm_inter_token_latency_seconds") + "\n" + p99("llm_time_to_first_token_seconds")}},
			[]string{"Lower the batch cap (vLLM `--max-num-seqs`, SGLang `--max-running-requests`).",
				"Scale out so each replica runs a smaller batch.",
				"Turn speculative decoding off at high load."}}
	case "gpu_throttling":
		return modeText{"The GPU is throttled",
			"The GPU reports thermal or power slowdown reasons, or its SM clock is well under its maximum under load: latency rises uniformly and tokens per joule fall, without any queue or KV change.",
			"(throttle reasons active or SM clock well under its maximum at load)",
			[]Query{{"Throttle reasons and SM clock of the GPUs the target holds",
				c.sel("llm_gpu_throttled", `instance="<instance>"`, `reason!="gpu_idle"`) + " == 1\n" +
					c.sel("llm_gpu_sm_clock_hertz", `instance="<instance>"`) + " / " + c.sel("llm_gpu_sm_clock_max_hertz", `instance="<instance>"`)},
				{"Which GPUs the target holds", c.ph("llm_gpu_info", "instance", "target")}},
			[]string{"Check the node's cooling (fans, inlet temperature, datacenter alarms) and its power cap (`nvidia-smi -q -d PERFORMANCE,POWER`).",
				"Drain the node if it cannot be fixed quickly: a throttled GPU slows every request on it.",
				"Restore the default power limit if someone lowered it."}}
	case "engine_stall":
		return modeText{"The engine stopped producing tokens",
			"Requests are running or waiting but the engine produces no tokens, or most requests end in errors or aborts, or the target stopped answering: the step loop is hung or the engine is failing.",
			"(requests running or waiting but no tokens produced, or errors and aborts high, or the target down)",
			[]Query{{"Tokens per second against running and waiting requests", rate("llm_generation_tokens_total") + "\n" +
				t("llm_requests_running") + "\n" + t("llm_requests_waiting")},
				{"Finished requests by reason (vLLM)", "sum by (reason) (rate(" + t("llm_requests_finished_total") + "[5m]))"},
				{"Is the target answering?", t("llm_up")}},
			[]string{"Read the engine's log for the hang or the error (CUDA errors, NCCL timeouts, out of memory).",
				"Restart the engine (delete the pod); its clients' requests are lost either way.",
				"If it recurs, pin the engine version that did not hang and report the hang upstream with the log."}}
	}
	panic("mixin: unknown mode " + mode)
}

func (c Config) engineAlerts() []Rule {
	up := c.sel("llm_up")
	return []Rule{
		// One alert per model the target last served (llm_model_info,
		// which the daemon keeps while the engine is down), so that the
		// page names them; one without a model where none is known (a
		// daemon that never scraped the engine). The route groups them by
		// target: one notification.
		c.alert("LLMEngineDown", fmt.Sprintf("%[1]s * on (%[2]s) group_left ()\n  (%[3]s == 0)\nor\n(%[3]s == 0) unless on (%[2]s) %[1]s",
			c.sel("llm_model_info"), c.by("target"), up), "2m", c.PageSeverity,
			"Engine "+where+" is down{{ with $labels.model }} (it served {{ . }}){{ end }}.",
			"The daemon on {{ $labels.instance }} has failed every scrape of {{ $labels.target }} ({{ $labels.engine }}) for 2m: llm_up = 0. "+
				"{{ with $labels.model }}It last served {{ . }} (llm_model_info). {{ else }}No model of it is known: the daemon has not scraped it since it started. {{ end }}"+
				"goodput_exporter_target_scrape_errors_total{target=\"{{ $labels.target }}\"} says why (timeout, connect, http_status, …). "+
				"While it is down no request is judged, so its SLO burn-rate alerts cannot see it.",
			&Runbook{Meaning: "The engine's `/metrics` endpoint has not answered a scrape of the daemon on its node for 2 minutes. " +
				"Either the engine process is down or restarting, or the daemon cannot reach it (wrong URL or port, network policy), or it answers something the daemon cannot read.",
				Confirm: []Query{{"Up, and the scrape errors by reason", c.ph("llm_up", "instance", "target") + "\n" +
					"sum by (reason) (increase(" + c.ph("goodput_exporter_target_scrape_errors_total", "instance", "target") + "[10m]))"}},
				Remedies: []string{"reason=\"connect\" or \"timeout\": check the engine pod (`kubectl get pod`, `kubectl logs --previous`); restart it if it hangs.",
					"reason=\"http_status\", \"redirect\" or \"parse\": the URL is not the engine's `/metrics`; fix the target's `url` in the daemon's configuration.",
					"reason=\"unknown_engine\" or \"multiple_engines\": set the target's `engine` explicitly, or point it at one engine process.",
					"If the engine was removed on purpose, remove the target from the daemon's configuration."}}),
		c.alert("LLMEngineSeriesAbsent", fmt.Sprintf("%s == 1\nunless on (%s)\n  (%s or %s or %s)", up, c.by("target"),
			c.sel("llm_requests_running"), c.sel("llm_prompt_tokens_total"), c.sel("llm_generation_tokens_total")), "10m", c.TicketSeverity,
			"Engine "+where+" answers but exports none of its series.",
			"{{ $labels.target }} ({{ $labels.engine }}) on {{ $labels.instance }} answers its scrapes (llm_up = 1) but for 10m the daemon has found none of "+
				"llm_requests_running, llm_prompt_tokens_total or llm_generation_tokens_total in it: every rule and dashboard over this engine is empty.",
			&Runbook{Meaning: "The engine's scrape succeeds but the daemon recognises none of its metric families. Usually the engine was upgraded and renamed its metrics, started with its metrics disabled, or the URL points at another service's `/metrics`.",
				Confirm: []Query{{"Up, and any engine series of the target", c.ph("llm_up", "instance", "target") + "\n" +
					"count by (__name__) ({__name__=~\"llm_.*\", " + strings.TrimPrefix(c.ph("x", "instance", "target"), "x{") + ")"}},
				Remedies: []string{"`curl` the target's URL and compare its metric names with the metric contract (docs/metrics.md).",
					"If the engine renamed its metrics, pin the previous engine version and report the names in an issue of this project.",
					"If the URL is wrong, fix the target's `url`."}}),
		c.alert("LLMEngineNotServing", fmt.Sprintf("(sum by (%[1]s) (min_over_time(%[2]s[5m])) > 0)\nand on (%[1]s)\n  (sum by (%[1]s) (rate(%[3]s[5m])) == 0)",
			c.by("target"), c.sel("llm_requests_waiting"), c.sel("llm_generation_tokens_total")), "5m", c.PageSeverity,
			"Engine "+where+" is up but serves nothing while requests wait.",
			"{{ $labels.target }} on {{ $labels.instance }} has had requests waiting for the last 5m (at least {{ $value }} at every scrape) "+
				"and produced no generation token in that time (rate(llm_generation_tokens_total[5m]) = 0).",
			&Runbook{Meaning: "The engine answers its scrapes but its step loop makes no progress: requests wait, none is served. A hung engine (NCCL, CUDA or a deadlock) looks like this; its latency histograms stop moving, so SLO alerts see no judged request.",
				Confirm: []Query{{"Waiting requests and tokens per second", c.ph("llm_requests_waiting", "instance", "target") + "\n" +
					"sum(rate(" + c.ph("llm_generation_tokens_total", "instance", "target") + "[5m]))"}},
				Remedies: []string{"Read the engine's log for the hang (NCCL timeout, CUDA error, out of memory).",
					"Restart the engine (delete its pod).",
					"If it recurs, pin the last engine version that did not hang."}}),
		c.alert("LLMEngineTargetsAbsent", fmt.Sprintf("%s == 1\nunless on (%s)\n  %s", c.sel("up"), c.by(), up), "15m", c.TicketSeverity,
			"The daemon on {{ $labels.instance }} scrapes no engine.",
			"goodput-exporter on {{ $labels.instance }} is up but has exported no llm_up series for 15m: it has no engine target, so nothing on this node is judged.",
			&Runbook{Meaning: "The daemon runs but its configuration names no engine target (or discovery found no engine pod on its node).",
				Confirm: []Query{{"The daemon's targets", c.ph("llm_up", "instance") + "\n" + c.ph("goodput_exporter_config_last_reload_successful", "instance")}},
				Remedies: []string{"Check the daemon's configuration file (`goodput-exporter check-config FILE`) and its log for the targets it loaded.",
					"If the node runs no engine on purpose, keep the daemon off it (node selector of the DaemonSet)."}}),
	}
}

func (c Config) selfAlerts() []Rule {
	return []Rule{
		c.alert("GoodputExporterTargetScrapeErrors", fmt.Sprintf("sum by (%[1]s) (increase(%[2]s[15m])) > 0\nunless on (%[3]s)\n  (%[4]s == 0)",
			c.by("target", "reason"), c.sel("goodput_exporter_target_scrape_errors_total"), c.by("target"), c.sel("llm_up")), "15m", c.TicketSeverity,
			"Scrapes of "+where+" keep failing ({{ $labels.reason }}).",
			"The daemon on {{ $labels.instance }} failed {{ $value | humanize }} scrapes of {{ $labels.target }} in the last 15m with reason {{ $labels.reason }}, "+
				"and has kept failing some for 15m while the engine is otherwise up: its series have gaps.",
			&Runbook{Meaning: "Some scrapes of an engine fail while others succeed: the engine is slow to answer (timeouts under load), its body is too large, or it restarts often. Its series have gaps; rates over them are less precise.",
				Confirm: []Query{{"Failed scrapes by reason, and the scrape duration", "sum by (reason) (increase(" + c.ph("goodput_exporter_target_scrape_errors_total", "instance", "target") + "[15m]))\n" +
					c.ph("goodput_exporter_target_scrape_duration_seconds", "instance", "target")}},
				Remedies: []string{"reason=\"timeout\": raise the target's `timeout` (up to the collection interval) or find why the engine's `/metrics` is slow.",
					"reason=\"body_too_large\": raise the target's `max_body_size`, or lower `model_limit` where many LoRA adapters inflate the body.",
					"reason=\"connect\": the engine restarts; look at its restart count and log."}}),
		c.alert("GoodputExporterConfigReloadFailed", c.sel("goodput_exporter_config_last_reload_successful")+" == 0", "5m", c.TicketSeverity,
			"goodput-exporter on {{ $labels.instance }} failed to reload its configuration.",
			"goodput_exporter_config_last_reload_successful = 0 on {{ $labels.instance }} for 5m: the daemon keeps running with its previous configuration, and the change you made is not in effect.",
			&Runbook{Meaning: "The last reload (SIGHUP or `POST /-/reload`) of the configuration file failed; the daemon keeps the configuration it had.",
				Confirm: []Query{{"Reload state and the time of the last good reload", c.ph("goodput_exporter_config_last_reload_successful", "instance") + "\n" +
					"time() - " + c.ph("goodput_exporter_config_last_reload_success_timestamp_seconds", "instance")}},
				Remedies: []string{"Run `goodput-exporter check-config FILE` on the new file: it prints every error with its line.",
					"A file naming more targets than `--collect.max-targets` (200 by default) is refused as a whole, with that reason in the log: raise the flag and the memory limit together, or split the targets over more daemons.",
					"Fix the file (or roll back the ConfigMap) and reload again."}}),
		c.alert("GoodputExporterGPUBackendDown", c.sel("goodput_exporter_gpu_backend_up")+" == 0", "10m", c.TicketSeverity,
			"goodput-exporter on {{ $labels.instance }} cannot read its GPUs ({{ $labels.backend }}).",
			"goodput_exporter_gpu_backend_up{backend=\"{{ $labels.backend }}\"} = 0 on {{ $labels.instance }} for 10m: no GPU power, energy, clock or throttle series from this node, "+
				"so joules per token, gpu_throttling and the energy dashboard are blind there. (With --gpu.backend none the series does not exist and this never fires.)",
			&Runbook{Meaning: "The daemon was given a GPU backend (or `auto` found none) and cannot collect through it: the NVIDIA library does not load in the container, DCGM's host engine is unreachable, or dcgm-exporter's URL does not answer.",
				Confirm: []Query{{"Backend state and failed collections", c.ph("goodput_exporter_gpu_backend_up", "instance") + "\n" +
					"increase(" + c.ph("goodput_exporter_gpu_backend_errors_total", "instance") + "[10m])"}},
				Remedies: []string{"nvml: run the pod with the NVIDIA runtime (`runtimeClassName: nvidia` or `NVIDIA_VISIBLE_DEVICES=all`) so `libnvidia-ml.so.1` is in the container.",
					"dcgm: check the host engine's address (`--gpu.dcgm.address`) and that nv-hostengine runs.",
					"dcgm-exporter: check `--gpu.dcgm-exporter.url` answers from the daemon's pod.",
					"On a node without GPUs, run with `--gpu.backend none`."}}),
		c.alert("GoodputExporterObjectiveUnmeasurable", c.sel("llm_slo_supported")+" == 0", "15m", c.TicketSeverity,
			"SLO {{ $labels.slo }}/{{ $labels.objective }} cannot be measured on "+where+".",
			"llm_slo_supported = 0 for objective {{ $labels.objective }} of SLO {{ $labels.slo }}, model {{ $labels.model }} on "+where+" ({{ $labels.engine }}): "+
				"the engine exports no series the objective can be judged on, so this objective has no attainment and no burn-rate alert there.",
			&Runbook{Meaning: "An SLO matches a model whose engine cannot measure one of its objectives (llama.cpp has no latency histograms; SGLang has no finish reasons for `error`). The objective is not judged: no attainment, no goodput from it, no page.",
				Confirm: []Query{{"Objectives unmeasurable on the target", c.ph("llm_slo_supported", "instance", "target") + " == 0"}},
				Remedies: []string{"Narrow the SLO's `match` (model regex, `targets`) to engines that can measure it.",
					"Or drop the objective from the SLO for that engine's models.",
					"Or upgrade the engine to a version that exports the histogram (docs/metrics.md, support matrix)."}}),
		c.alert("GoodputExporterDown", c.sel("up")+" == 0", "5m", c.TicketSeverity,
			"goodput-exporter on {{ $labels.instance }} is down.",
			"Prometheus has failed to scrape goodput-exporter on {{ $labels.instance }} for 5m (up = 0): no engine on that node is judged and none of its alerts can fire.",
			&Runbook{Meaning: "Prometheus cannot scrape one node's daemon: the pod is crash-looping, not ready, or unreachable from Prometheus.",
				Confirm: []Query{{"Scrape state of the daemons", c.sel("up") + " == 0"}},
				Remedies: []string{"`kubectl -n monitoring get pods -o wide` and `kubectl logs --previous` of the node's daemon pod.",
					"Check that the Service and ServiceMonitor (or scrape configuration) still select the pod and its `metrics` port."}}),
		c.alert("GoodputExporterAbsent", "absent("+c.sel("up")+" == 1)", "10m", c.PageSeverity,
			"No goodput-exporter is up.",
			"No series up{"+c.Selector+"} == 1 for 10m: Prometheus scrapes no healthy goodput-exporter, so no SLO, failure-mode or engine alert of this mixin can fire anywhere.",
			&Runbook{Meaning: "Prometheus has no healthy goodput-exporter target at all: the DaemonSet is gone, its pods are not ready on any node, or the scrape configuration no longer finds them.",
				Confirm: []Query{{"Daemons Prometheus knows", "count(" + c.sel("up") + ")"}},
				Remedies: []string{"`kubectl -n monitoring get daemonset goodput-exporter` and its pods.",
					"Check the ServiceMonitor or scrape configuration (job name, namespace, port name) against the rules' selector `" + c.Selector + "`."}}),
	}
}

// capacityAlerts warn before traffic reaches the knee the daemon estimated
// from what it has seen. Only estimate="knee" counts: a lower bound says
// the knee is at least there, not that it is near.
func (c Config) capacityAlerts() []Rule {
	return []Rule{
		c.alert("LLMCapacityHeadroomLow", c.sel("llm_capacity_headroom_ratio", `estimate="knee"`)+" < 0.1", "15m", c.TicketSeverity,
			"Engine "+where+" runs within 10 % of its knee ({{ $labels.slo }}).",
			"{{ $labels.target }} (model {{ $labels.model }}) on {{ $labels.instance }} has run for 15m with a headroom of {{ $value | humanizePercentage }} "+
				"below the knee the daemon estimated under SLO {{ $labels.slo }} (llm_capacity_headroom_ratio{estimate=\"knee\"}): "+
				"a little more load and goodput stops tracking throughput. llm_capacity_knee_requests_per_second gives the knee.",
			&Runbook{Meaning: "The daemon estimates, from the load levels it has observed, the load at which goodput under the SLO stops rising (the knee). " +
				"Traffic is now within 10 % of it, or past it when the headroom is negative: past the knee more load buys less good work and the SLO's burn rate climbs.",
				Confirm: []Query{{"Headroom, the knee, and its evidence", c.ph("llm_capacity_headroom_ratio", "instance", "target") + "\n" +
					c.ph("llm_capacity_knee_requests_per_second", "instance", "target") + "\n" +
					c.ph("llm_capacity_load_levels", "instance", "target")}},
				Remedies: []string{"Add replicas before the peak: replicas = peak goodput needed ÷ the knee's goodput (`goodput-exporter capacity` does the sum from a sweep).",
					"Shed or delay batch traffic to keep interactive load under the knee.",
					"If the knee moved down after an upgrade or a flag change, compare sweeps with `goodput-exporter capacity --baseline`."}}),
	}
}

// AlertGroups are the alerting rules (rules/goodput.alerts.yml).
func (c Config) AlertGroups() []Group {
	return c.scaled([]Group{
		{Name: "goodput-exporter.slo-alerts", Interval: c.FastInterval, Rules: c.burnAlerts()},
		{Name: "goodput-exporter.failure-mode-alerts", Interval: c.FastInterval, Rules: c.failureModeAlerts()},
		{Name: "goodput-exporter.engine-alerts", Interval: c.FastInterval, Rules: c.engineAlerts()},
		{Name: "goodput-exporter.self-alerts", Interval: c.FastInterval, Rules: c.selfAlerts()},
		{Name: "goodput-exporter.capacity-alerts", Interval: c.FastInterval, Rules: c.capacityAlerts()},
	})
}
