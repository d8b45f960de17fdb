package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/mixin"
)

// The suite: one world, its scenarios played out concurrently on
// different engines, then checked one by one.
func TestEndToEnd(t *testing.T) {
	w := setup(t)
	t.Logf("world up in %v: prometheus %s, daemons %s (node-a) and %s (node-b)", time.Since(w.start).Round(time.Second), w.prom.base, w.instA, w.instB)

	w.play(t)
	t.Run("levers", w.checkLevers)
	t.Run("overload pages", w.checkOverload)
	t.Run("healthy engines raise nothing", w.checkHealthy)
	t.Run("engine restart", w.checkRestart)
	t.Run("dashboard panels return data", w.checkDashboards)
	// Last: it stops the daemons.
	t.Run("daemon stopped", w.checkDaemonStopped)
	if t.Failed() {
		t.Logf("every notification:\n%s\n%s", w.hook.dump(""), w.logs())
	}
	t.Logf("suite took %v", time.Since(w.start).Round(time.Second))
}

// Timings of the play, in wall time from the start.
const (
	killAt    = 30 * time.Second // the restarted engine is killed ...
	restartAt = 38 * time.Second // ... and comes back, down long enough for LLMEngineDown to fire for several evaluations and reach Alertmanager
	// playFor bounds the wait for every lever to fire and resolve and for
	// the overload to page: the levers start at 18 s and end by 54 s;
	// a mode is named within a few windows (6 s each) and cleared after
	// three clean ones.
	playFor = 4 * time.Minute
)

// play runs until every lever's alert has fired and resolved and the
// overload has paged, or playFor has passed; it kills and restarts the
// restarted engine on the way, reading its own counter before and after.
func (w *world) play(t *testing.T) {
	killed, back := false, false
	for {
		el := time.Since(w.start)
		if !killed && el >= killAt {
			w.beforeKill = engineCounter(w.restartPort)
			w.restart.kill()
			killed = true
		}
		if killed && !back && el >= restartAt {
			w.restart = start(t, restarted+"-2", w.restartArgs...)
			w.restart.waitLine(t, "scrape them with", 30*time.Second)
			back = true
		}
		if back && w.afterRestart < 0 {
			w.afterRestart = engineCounter(w.restartPort)
		}
		if back && w.allPlayed() {
			t.Logf("every lever fired and resolved, the overload paged, after %v", el.Round(time.Second))
			return
		}
		if el > playFor {
			t.Logf("play ended at its bound %v with scenarios unfinished", playFor)
			return
		}
		time.Sleep(time.Second)
	}
}

// allPlayed: every lever has ended, its alert fired and resolved after
// the end (or clearBy has passed since), and the overload paged.
func (w *world) allPlayed() bool {
	for _, e := range append(append([]engine{}, nodeA...), nodeB...) {
		if e.alert == "" {
			continue
		}
		earlyEnd, lateEnd := w.at(e, e.onset+e.dur)
		if time.Now().Before(lateEnd) {
			return false
		}
		if w.resolvedAfter(e, earlyEnd) == nil && time.Now().Before(lateEnd.Add(clearBy)) {
			return false
		}
	}
	return len(w.pages()) > 0
}

// notes are the notifications of e's alert for e, in arrival order.
func (w *world) notes(e engine) []notification {
	return w.hook.find(func(n notification) bool {
		return n.Labels["alertname"] == e.alert && n.Labels["target"] == e.name
	})
}

// firstFiring is the first firing notification of e's alert for e.
func (w *world) firstFiring(e engine) *notification {
	for _, n := range w.notes(e) {
		if n.Status == "firing" {
			return &n
		}
	}
	return nil
}

// resolvedAfter is the first resolution of e's alert for e at or after
// t.
func (w *world) resolvedAfter(e engine, t time.Time) *notification {
	for _, n := range w.notes(e) {
		if n.Status == "resolved" && !n.At.Before(t) {
			return &n
		}
	}
	return nil
}

// pages are the pages of the overloaded engine once the page-level
// burn-rate alert fires in Prometheus: Alertmanager sends it, or the
// critical failure-mode alert that inhibits it.
func (w *world) pages() []notification {
	if len(mustQuery(w.prom, fmt.Sprintf(`max_over_time(ALERTS{alertname="LLMErrorBudgetBurn1h", alertstate="firing", target=%q}[%s])`, overloaded, w.since()))) == 0 {
		return nil
	}
	return w.hook.find(func(n notification) bool {
		return n.Status == "firing" && n.Labels["target"] == overloaded && n.Labels["severity"] == "critical"
	})
}

// explain is the evidence for a target's failure: what fired, and the
// PromQL that shows the classifier's verdicts and the alerts' states.
func (w *world) explain(target string) string {
	r := w.since()
	return w.hook.dump(target) +
		w.prom.show(fmt.Sprintf(`max by (mode) (max_over_time(llm_failure_mode{target=%q}[%s]))`, target, r)) +
		w.prom.show(fmt.Sprintf(`min by (mode) (min_over_time(llm_failure_mode_supported{target=%q}[%s]))`, target, r)) +
		w.prom.show(fmt.Sprintf(`max by (alertname, alertstate) (max_over_time(ALERTS{target=%q}[%s]))`, target, r)) +
		w.timeline(fmt.Sprintf(`llm_failure_mode{target=%q} == 1`, target), "mode") +
		w.timeline(fmt.Sprintf(`ALERTS{target=%q}`, target), "alertname", "alertstate")
}

// timeline is when each series of q had a value, in seconds from the
// start, e.g. "mode=queue_growth: 31-47s".
func (w *world) timeline(q string, labels ...string) string {
	start := w.start.Truncate(time.Second)
	res, err := w.prom.queryRange(q, start, time.Now(), time.Second)
	var b strings.Builder
	fmt.Fprintf(&b, "  PromQL over the run, when present (s from the start): %s\n", q)
	if err != nil {
		fmt.Fprintf(&b, "    error: %v\n", err)
	}
	if len(res) == 0 {
		b.WriteString("    (never)\n")
	}
	for _, s := range res {
		var name []string
		for _, l := range labels {
			name = append(name, l+"="+s.Metric[l])
		}
		var spans []string
		from, last := -1, -1
		for _, ts := range s.Times {
			sec := int(ts.Sub(start).Seconds())
			if from >= 0 && sec > last+1 {
				spans = append(spans, fmt.Sprintf("%d-%ds", from, last))
				from = -1
			}
			if from < 0 {
				from = sec
			}
			last = sec
		}
		if from >= 0 {
			spans = append(spans, fmt.Sprintf("%d-%ds", from, last))
		}
		fmt.Fprintf(&b, "    %s: %s\n", strings.Join(name, " "), strings.Join(spans, ", "))
	}
	return b.String()
}

// Each lever: its failure-mode alert reaches the webhook with its runbook,
// the target and the evidence, no other failure-mode alert does for that
// target; it fires within firedBy of the onset, stays firing to the
// lever's end, and resolves within clearBy after it.
func (w *world) checkLevers(t *testing.T) {
	for _, e := range append(append([]engine{}, nodeA...), nodeB...) {
		if e.alert == "" {
			continue
		}
		earlyOn, lateOn := w.at(e, e.onset)
		earlyEnd, lateEnd := w.at(e, e.onset+e.dur)
		rel := func(at time.Time) time.Duration { return at.Sub(w.start).Round(time.Second) }
		fired := w.firstFiring(e)
		resolved := w.resolvedAfter(e, earlyEnd)
		var problems []string
		switch {
		case fired == nil:
			problems = append(problems, "never fired")
		case fired.At.Before(earlyOn):
			problems = append(problems, fmt.Sprintf("fired at %v, before the lever started at %v", rel(fired.At), rel(earlyOn)))
		case fired.At.After(lateOn.Add(firedBy)):
			problems = append(problems, fmt.Sprintf("fired at %v, more than %v after the lever started at %v", rel(fired.At), firedBy, rel(lateOn)))
		}
		// Firing from the first notification to the lever's end: no
		// resolution before the end, and Prometheus held the alert
		// firing at every evaluation in between.
		for _, n := range w.notes(e) {
			if n.Status == "resolved" && n.At.Before(earlyEnd) {
				problems = append(problems, fmt.Sprintf("resolved at %v while the lever ran (until %v..%v)", rel(n.At), rel(earlyEnd), rel(lateEnd)))
			}
		}
		if fired != nil && fired.At.Before(earlyEnd) {
			if gap := w.firingGaps(e, fired.At, earlyEnd); gap != "" {
				problems = append(problems, gap)
			}
		}
		switch {
		case resolved == nil:
			problems = append(problems, fmt.Sprintf("not resolved after the lever ended at %v..%v", rel(earlyEnd), rel(lateEnd)))
		case resolved.At.After(lateEnd.Add(clearBy)):
			problems = append(problems, fmt.Sprintf("resolved at %v, more than %v after the lever ended at %v", rel(resolved.At), clearBy, rel(lateEnd)))
		}
		// Once the lever has ended the alert is resolved and stays so:
		// its last notification says resolved, and Prometheus holds no
		// pending or firing alert for it.
		all := w.notes(e)
		if len(all) > 0 && all[len(all)-1].Status != "resolved" {
			problems = append(problems, "its last notification is "+all[len(all)-1].String())
		}
		if q := fmt.Sprintf(`ALERTS{alertname=%q, target=%q}`, e.alert, e.name); len(mustQuery(w.prom, q)) > 0 {
			problems = append(problems, fmt.Sprintf("still active %v after the lever ended:\n%s", time.Since(lateEnd).Round(time.Second), w.prom.show(q)))
		}
		if fired != nil {
			a := fired.Annotations
			if want := "/" + e.alert + ".md"; !strings.HasSuffix(a["runbook_url"], want) {
				problems = append(problems, fmt.Sprintf("runbook_url %q, want one ending %s", a["runbook_url"], want))
			}
			d := a["description"]
			// The evidence: the verdict with its value, the mode's rule
			// and the target on its node, all rendered.
			for _, want := range []string{fmt.Sprintf(`llm_failure_mode{mode=%q} = 1`, e.lever), e.name, fired.Labels["instance"], "consecutive"} {
				if want == "" || !strings.Contains(d, want) {
					problems = append(problems, fmt.Sprintf("description lacks %q: %s", want, d))
				}
			}
			// The page alone tells what to look at: the target's model
			// (llm_failure_mode has no model label; the description reads
			// it from the engine's series) and at least one of the
			// classifier's signal values.
			models := mustQuery(w.prom, fmt.Sprintf(`group by (model) (llm_generation_tokens_total{target=%q})`, e.name))
			if len(models) == 0 || models[0].Metric["model"] == "" {
				problems = append(problems, "no model known for the target in Prometheus")
			} else if want := "model " + models[0].Metric["model"]; !strings.Contains(d, want) {
				problems = append(problems, fmt.Sprintf("description lacks %q: %s", want, d))
			}
			signal := false
			for _, what := range mixin.Default().SignalEvidence(e.lever) {
				signal = signal || regexp.MustCompile(regexp.QuoteMeta(what)+` -?[0-9]`).MatchString(d)
			}
			if !signal {
				problems = append(problems, fmt.Sprintf("description shows no signal value of %v: %s", mixin.Default().SignalEvidence(e.lever), d))
			}
			if strings.Contains(d, "{{") || strings.Contains(a["summary"], "{{") {
				problems = append(problems, "unrendered template in "+d)
			}
		}
		for _, n := range w.hook.find(func(n notification) bool {
			return n.Labels["target"] == e.name && n.Status == "firing" && failureModeAlerts[n.Labels["alertname"]] && n.Labels["alertname"] != e.alert
		}) {
			problems = append(problems, "another failure-mode alert fired: "+n.String())
		}
		if len(problems) > 0 {
			t.Errorf("lever %s on %s from %v..%v to %v..%v (from the start): expected %s firing within %v of the onset, firing to the end, resolved within %v after it, and no other failure-mode alert; got:\n  %s\n%s",
				e.lever, e.name, rel(earlyOn), rel(lateOn), rel(earlyEnd), rel(lateEnd), e.alert, firedBy, clearBy, strings.Join(problems, "\n  "), w.explain(e.name))
		} else {
			t.Logf("%s on %s from %v..%v to %v..%v: %s fired at %v (%v after the earliest onset), resolved at %v (%v after the earliest end)",
				e.lever, e.name, rel(earlyOn), rel(lateOn), rel(earlyEnd), rel(lateEnd), e.alert, rel(fired.At), fired.At.Sub(earlyOn).Round(time.Second),
				rel(resolved.At), resolved.At.Sub(earlyEnd).Round(time.Second))
		}
	}
}

// firingGaps says when, between from and to, Prometheus did not hold e's
// alert firing ("" if it always did): it evaluates every second, so a
// gap of more than 3 s is the alert resolved and fired again between two
// notifications.
func (w *world) firingGaps(e engine, from, to time.Time) string {
	q := fmt.Sprintf(`ALERTS{alertname=%q, target=%q, alertstate="firing"}`, e.alert, e.name)
	res, err := w.prom.queryRange(q, from, to, time.Second)
	if err != nil {
		return err.Error()
	}
	var times []time.Time
	for _, s := range res {
		times = append(times, s.Times...)
	}
	return gaps(times, from, to, 3*time.Second, w.start, q)
}

// gaps lists the stretches longer than max in [from, to] without a time
// of ts, in seconds from start; "" if none.
func gaps(ts []time.Time, from, to time.Time, max time.Duration, start time.Time, what string) string {
	ts = append(slices.Clone(ts), to)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var out []string
	prev := from
	for _, at := range ts {
		if at.Sub(prev) > max {
			out = append(out, fmt.Sprintf("%v-%v", prev.Sub(start).Round(time.Second), at.Sub(start).Round(time.Second)))
		}
		if at.After(prev) {
			prev = at
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf("not firing in Prometheus during %s (from the start) while the lever ran: %s", strings.Join(out, ", "), what)
}

// An overload pages: the page-level burn-rate alert fires in
// Prometheus, and Alertmanager sends a page for it: the burn page, or
// the critical failure-mode alert naming the cause, which inhibits it
// (deploy/alertmanager/inhibit-rules.yml) once it fires.
func (w *world) checkOverload(t *testing.T) {
	pages := w.pages()
	if len(pages) == 0 {
		r := w.since()
		t.Fatalf("overload on %s: expected LLMErrorBudgetBurn1h firing; got none\n%s%s%s", overloaded, w.explain(overloaded),
			w.prom.show(fmt.Sprintf(`max_over_time(target_model_slo_objective:llm_slo_burn_rate:ratio_rate1h{target=%q}[%s])`, overloaded, r)),
			w.prom.show(fmt.Sprintf(`max_over_time(target_model_slo_objective:llm_slo_burn_rate:ratio_rate5m{target=%q}[%s])`, overloaded, r)))
	}
	p := pages[0]
	if p.Labels["severity"] != "critical" || !strings.HasSuffix(p.Annotations["runbook_url"], "/"+p.Labels["alertname"]+".md") {
		t.Errorf("page %s: severity %q, runbook %q", p, p.Labels["severity"], p.Annotations["runbook_url"])
	}
	// Not one page: here the burn alerts' windows and for: run 60 times
	// faster than the classifier's, so the burn page comes first and a
	// failure-mode alert inhibits only what fires after it.
	t.Logf("overload paged: %s; pages sent: %v", p, w.pagedAlerts(overloaded))
}

// pagedAlerts are the names of the critical alerts Alertmanager sent
// firing for target.
func (w *world) pagedAlerts(target string) []string {
	var names []string
	for _, n := range w.hook.find(func(n notification) bool {
		return n.Status == "firing" && n.Labels["target"] == target && n.Labels["severity"] == "critical"
	}) {
		if !slices.Contains(names, n.Labels["alertname"]) {
			names = append(names, n.Labels["alertname"])
		}
	}
	return names
}

// Healthy engines: no alert at all names them.
func (w *world) checkHealthy(t *testing.T) {
	for _, e := range append(append([]engine{}, nodeA...), nodeB...) {
		if e.lever != "" {
			continue
		}
		if got := w.hook.find(func(n notification) bool { return n.Labels["target"] == e.name }); len(got) > 0 {
			t.Errorf("healthy %s: expected no alert; got:\n%s", e.name, w.explain(e.name))
		}
	}
}

// engineCounter reads the restarted engine's own generation-token
// counter (vLLM's name), -1 when unreadable.
func engineCounter(port int) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^vllm:generation_tokens_total\{[^}]*\} (\S+)$`).FindSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// An engine killed and restarted mid-run: one page (LLMEngineDown; the
// inhibit rules mute the rest); its own counters start again from zero,
// yet no recorded rate goes negative and no counter the daemons export
// decreases.
func (w *world) checkRestart(t *testing.T) {
	// Alertmanager sends a page some time after Prometheus fires it (its
	// group wait, then the webhook): wait for it a while before judging.
	want := []string{"LLMEngineDown"}
	got := w.pagedAlerts(restarted)
	for deadline := time.Now().Add(30 * time.Second); !slices.Equal(got, want) && time.Now().Before(deadline); got = w.pagedAlerts(restarted) {
		time.Sleep(500 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("killed engine %s: expected one page, LLMEngineDown; Alertmanager sent %v\n%s", restarted, got, w.explain(restarted))
	}
	if !(w.beforeKill > 0 && w.afterRestart >= 0 && w.afterRestart < w.beforeKill) {
		t.Fatalf("the engine's own counter did not start again: %v before the kill, %v after the restart", w.beforeKill, w.afterRestart)
	}
	r := w.since()
	// Every recording rule the rules file renders, at its lowest over
	// the run; and the restarted target among what they record.
	covered := 0
	for _, g := range mixinConfig().RecordingGroups() {
		for _, rule := range g.Rules {
			q := fmt.Sprintf(`min_over_time(%s[%s]) < 0`, rule.Record, r)
			if res, err := w.prom.query(q); err != nil || len(res) > 0 {
				t.Errorf("recording rule %s: expected never below 0; got:\n%s", rule.Record, w.prom.show(q))
			}
			q = fmt.Sprintf(`count(%s{target=%q})`, rule.Record, restarted)
			if res, err := w.prom.query(q); err == nil && len(res) > 0 {
				covered++
			}
		}
	}
	if covered < 8 {
		t.Errorf("expected the per-target recording rules to cover %s; %d do", restarted, covered)
	}
	// Every counter family the daemons export, by the metadata
	// Prometheus scraped. The daemon's own (goodput, SLO judgements,
	// energy it integrates, its self-metrics) never reset; the engine's
	// raw series are cumulative as the engine reports them and reset
	// with it (README, Metric contract), which must show here, or the
	// restart was not seen.
	data, err := w.prom.get("/api/v1/metadata", nil)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string][]struct{ Type string }
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatal(err)
	}
	owned := regexp.MustCompile(`^(llm_goodput_.*|llm_slo_.*|llm_engine_gpu_energy_joules|llm_gpu_energy_joules|goodput_exporter_.*)_total$`)
	var names []string
	for name, ms := range meta {
		if len(ms) > 0 && ms[0].Type == "counter" && owned.MatchString(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, want := range []string{"llm_goodput_requests_total", "llm_goodput_tokens_total", "llm_slo_requests_total", "llm_slo_good_requests_total"} {
		if !slices.Contains(names, want) {
			t.Errorf("daemon counter %s not among those Prometheus scraped: %v", want, names)
		}
	}
	for _, name := range names {
		q := fmt.Sprintf(`resets(%s{job="goodput-exporter"}[%s]) > 0`, name, r)
		if res, err := w.prom.query(q); err != nil || len(res) > 0 {
			t.Errorf("daemon counter %s: expected never to decrease; got:\n%s", name, w.prom.show(q))
		}
	}
	q := fmt.Sprintf(`resets(llm_generation_tokens_total{target=%q}[%s]) >= 1`, restarted, r)
	if res, err := w.prom.query(q); err != nil || len(res) == 0 {
		t.Errorf("expected the engine's own token counter to reset with it; got:\n%s", w.prom.show(q))
	}
	// The restarted target's tokens kept counting across the restart.
	q = fmt.Sprintf(`increase(llm_goodput_tokens_total{target=%q, bound="upper"}[%s])`, restarted, r)
	if res, err := w.prom.query(q); err != nil || len(res) == 0 || res[0].Values[0] <= w.beforeKill*0.5 {
		t.Errorf("expected %s's good tokens to keep counting past the restart (the engine counted %v tokens before it); got:\n%s", restarted, w.beforeKill, w.prom.show(q))
	}
	t.Logf("engine counter %v before the kill, %v after the restart; daemon counters checked: %s", w.beforeKill, w.afterRestart, strings.Join(names, ", "))
}

// panel is one query of a dashboard panel.
type panel struct{ dashboard, title, expr string }

func panels(t *testing.T) ([]panel, []panel) {
	paths, _ := filepath.Glob(filepath.Join("..", "dashboards", "*.json"))
	if len(paths) == 0 {
		t.Fatal("no dashboards")
	}
	var ps, vars []panel
	type jp struct {
		Title   string
		Targets []struct{ Expr string }
		Panels  []json.RawMessage
	}
	var walk func(dash string, raw []json.RawMessage)
	walk = func(dash string, raw []json.RawMessage) {
		for _, r := range raw {
			var p jp
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				ps = append(ps, panel{dash, p.Title, tg.Expr})
			}
			walk(dash, p.Panels)
		}
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels     []json.RawMessage
			Templating struct {
				List []struct{ Name, Type, Query string }
			}
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		walk(filepath.Base(path), d.Panels)
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				vars = append(vars, panel{filepath.Base(path), "$" + v.Name, v.Query})
			}
		}
	}
	return ps, vars
}

// templateVar is a Grafana variable in a query.
var templateVar = regexp.MustCompile(`\$(__rate_interval|__interval|__range|[a-z_]+)|\$\{([a-z_]+)\}`)

// substitute gives every variable a value matching everything (a
// regexp for the label variables, Grafana's intervals a minute).
func substitute(expr string) string {
	return templateVar.ReplaceAllStringFunc(expr, func(m string) string {
		switch strings.Trim(m, "${}") {
		case "__rate_interval", "__interval", "__range":
			return "1m"
		}
		return ".*"
	})
}

// labelValues turns label_values(SELECTOR, LABEL) into a query that
// returns one series per value.
var labelValues = regexp.MustCompile(`^label_values\((.*), *([a-z_]+)\)$`)

// Every dashboard panel's query, variables substituted, returns data over
// the run, as Grafana would draw it; every query variable has a value.
func (w *world) checkDashboards(t *testing.T) {
	ps, vars := panels(t)
	// A panel over the hourly tiles (the 1d and 3d windows, the budget
	// left) has data once the hourly-tile group has evaluated after the
	// first 5m tiles; that group runs once a scaled hour (a minute here),
	// at an offset of Prometheus' choosing, so an empty panel is asked
	// again until two of its intervals have passed.
	deadline := time.Now().Add(2 * time.Minute)
	empty := 0
	for _, p := range ps {
		q := substitute(p.expr)
		for {
			res, err := w.prom.queryRange(q, w.start, time.Now(), time.Second)
			n := 0
			for _, s := range res {
				n += len(s.Values)
			}
			if err == nil && n > 0 {
				break
			}
			if time.Now().After(deadline) {
				empty++
				t.Errorf("dashboard %s, panel %q: expected data over the run; got %d series (%v)\n  PromQL: %s", p.dashboard, p.title, len(res), err, q)
				break
			}
			time.Sleep(2 * time.Second)
		}
	}
	for _, v := range vars {
		m := labelValues.FindStringSubmatch(v.expr)
		if m == nil {
			t.Errorf("dashboard %s, variable %s: query %q is not label_values(selector, label)", v.dashboard, v.title, v.expr)
			continue
		}
		q := fmt.Sprintf(`count by (%s) (%s)`, m[2], substitute(m[1]))
		res, err := w.prom.query(q)
		ok := false
		for _, s := range res {
			ok = ok || s.Metric[m[2]] != ""
		}
		if v.title == "$"+mixinConfig().ClusterLabel {
			// One Prometheus without a cluster label: the variable has no
			// value, only All, and every panel above had data under it.
			if err != nil || ok {
				t.Errorf("dashboard %s, variable %s: want no value on one Prometheus; got:\n%s", v.dashboard, v.title, w.prom.show(q))
			}
			continue
		}
		if err != nil || !ok {
			t.Errorf("dashboard %s, variable %s: expected a value; got:\n%s", v.dashboard, v.title, w.prom.show(q))
		}
	}
	t.Logf("%d panel queries, %d returned no data; %d variables", len(ps), empty, len(vars))
}

// A daemon stopped: its absence alert fires for its instance; both
// stopped, no goodput-exporter is up and the fleet-wide absence alert
// fires.
func (w *world) checkDaemonStopped(t *testing.T) {
	wait := func(what string, match func(notification) bool, within time.Duration) bool {
		deadline := time.Now().Add(within)
		for time.Now().Before(deadline) {
			if len(w.hook.find(match)) > 0 {
				return true
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("expected %s within %v; got:\n%s%s%s", what, within, w.hook.dump(""),
			w.prom.show(`up{job="goodput-exporter"}`), w.prom.show(`ALERTS{alertname=~"GoodputExporter.*"}`))
		return false
	}
	stopped := time.Now()
	syscall.Kill(-w.daemonB.cmd.Process.Pid, syscall.SIGTERM)
	w.daemonB.kill()
	if wait("GoodputExporterDown for "+w.instB, func(n notification) bool {
		return n.Status == "firing" && n.Labels["alertname"] == "GoodputExporterDown" && n.Labels["instance"] == w.instB
	}, time.Minute) {
		t.Logf("GoodputExporterDown for node-b %v after it stopped", time.Since(stopped).Round(time.Second))
	}
	if got := w.hook.find(func(n notification) bool {
		return n.Labels["alertname"] == "GoodputExporterDown" && n.Labels["instance"] == w.instA
	}); len(got) > 0 {
		t.Errorf("node-a runs, yet: %s", got[0])
	}
	stopped = time.Now()
	w.daemonA.kill()
	if wait("GoodputExporterAbsent", func(n notification) bool {
		return n.Status == "firing" && n.Labels["alertname"] == "GoodputExporterAbsent"
	}, time.Minute) {
		t.Logf("GoodputExporterAbsent %v after the last daemon stopped", time.Since(stopped).Round(time.Second))
	}
}

// mustQuery is the query's answer, nil on error (shown by show).
func mustQuery(p promAPI, q string) []series {
	res, _ := p.query(q)
	return res
}
