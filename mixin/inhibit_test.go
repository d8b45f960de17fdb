package mixin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// alertmanagerBin is Debian's prometheus-alertmanager (CI installs it);
// the test is skipped where it is absent, unless GOODPUT_REQUIRE_PROMTOOL
// asks for the Prometheus tools.
func alertmanagerBin(t *testing.T, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("GOODPUT_REQUIRE_PROMTOOL") != "" {
		t.Fatalf("%v required (apt-get install prometheus-alertmanager)", names)
	}
	t.Skipf("%v not installed", names)
	return ""
}

// amConfig is an Alertmanager configuration with the shipped route under
// a top route that puts every other alert in a group of its own, the
// shipped inhibit rules and one receiver.
func amConfig(t *testing.T, dir string) string {
	t.Helper()
	snippet, err := Default().inhibitSnippet()
	if err != nil {
		t.Fatal(err)
	}
	route, err := Default().routeSnippet()
	if err != nil {
		t.Fatal(err)
	}
	var routes strings.Builder
	for _, line := range strings.Split(strings.TrimRight(string(route), "\n"), "\n") {
		if !strings.HasPrefix(line, "#") {
			routes.WriteString("  " + line + "\n")
		}
	}
	cfg := "route:\n  receiver: default\n  group_by: ['...']\n" + routes.String() + "receivers:\n  - name: default\n" + string(snippet)
	path := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInhibitRulesCheckConfig(t *testing.T) {
	amtool := alertmanagerBin(t, "amtool")
	path := amConfig(t, t.TempDir())
	out, err := exec.Command(amtool, "check-config", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d inhibit rules", len(Default().InhibitRules()))) {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
	// The committed snippet is the one checked here (TestCommittedFilesAreGenerated
	// keeps it current).
	if _, err := os.Stat("../" + InhibitFile); err != nil {
		t.Fatal(err)
	}
}

// The inhibit rules in a real Alertmanager: alerts as the shipped rules
// label them are posted, and Alertmanager's own API says which it mutes.
func TestInhibitRulesInAlertmanager(t *testing.T) {
	bin := alertmanagerBin(t, "prometheus-alertmanager", "alertmanager")
	dir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	cmd := exec.Command(bin, "--config.file="+amConfig(t, dir), "--storage.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--cluster.listen-address=", "--log.level=warn")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanager not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Labels as the rules give them: the daemon labels, the series' own
	// labels, and severity.
	daemon := func(node string) map[string]string {
		return map[string]string{"instance": node + ":9835", "job": "goodput-exporter", "node": node}
	}
	alert := func(name, severity, node, target string, extra ...string) map[string]string {
		l := daemon(node)
		l["alertname"], l["severity"] = name, severity
		if target != "" {
			l["target"], l["engine"] = target, "vllm"
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	burn := []string{"model", "m", "slo", "chat", "objective", "ttft"}
	objective := func(o string) []string { return []string{"model", "m", "slo", "chat", "objective", o} }
	cases := []struct {
		labels    map[string]string
		inhibited bool
	}{
		// A killed engine on node a: one page, LLMEngineDown.
		{alert("LLMEngineDown", "critical", "a", "e0"), false},
		{alert("LLMEngineStall", "critical", "a", "e0", "mode", "engine_stall"), true},
		{alert("LLMQueueGrowth", "critical", "a", "e0", "mode", "queue_growth"), true},
		{alert("LLMErrorBudgetBurn1h", "critical", "a", "e0", burn...), true},
		{alert("LLMEngineNotServing", "critical", "a", "e0"), true},
		// Another engine of the same daemon, and the same target name on
		// another daemon, are not muted by it.
		{alert("LLMErrorBudgetBurn1h", "critical", "a", "e1", burn...), false},
		{alert("LLMKVPreemption", "critical", "b", "e0", "mode", "kv_preemption"), false},
		// A down daemon (node c): its own ticket only.
		{alert("GoodputExporterDown", "warning", "c", ""), false},
		{alert("LLMQueueGrowth", "critical", "c", "e0", "mode", "queue_growth"), true},
		{alert("GoodputExporterConfigReloadFailed", "warning", "c", ""), true},
		// A critical failure mode mutes the burn pages of its target (node
		// b, e0), but a warning one does not (node d).
		{alert("LLMErrorBudgetBurn6h", "critical", "b", "e0", burn...), true},
		{alert("LLMPrefixCacheCollapse", "warning", "d", "e0", "mode", "prefix_cache_collapse"), false},
		{alert("LLMErrorBudgetBurn1h", "critical", "d", "e0", burn...), false},
		// A hung engine: LLMEngineStall mutes LLMEngineNotServing, of its
		// own target only: another engine of the daemon that serves
		// nothing is another page.
		{alert("LLMEngineStall", "critical", "e", "e0", "mode", "engine_stall"), false},
		{alert("LLMEngineNotServing", "critical", "e", "e0"), true},
		{alert("LLMEngineNotServing", "critical", "e", "e1"), false},
		// A critical failure mode mutes the burn pages of its own target
		// only.
		{alert("LLMQueueGrowth", "critical", "f", "e0", "mode", "queue_growth"), false},
		{alert("LLMErrorBudgetBurn1h", "critical", "f", "e1", burn...), false},
		// One overload on node g, e0, breaks the three objectives of one
		// SLO over 1h and 6h (and TTFT over 1d): the 1h alerts mute the
		// slower ones of their own objective; the three left are one
		// group of the shipped route, one notification. The same
		// objective on another engine of the daemon, e1, is its own page.
		{alert("LLMErrorBudgetBurn1h", "critical", "g", "e0", objective("ttft")...), false},
		{alert("LLMErrorBudgetBurn1h", "critical", "g", "e0", objective("tpot")...), false},
		{alert("LLMErrorBudgetBurn1h", "critical", "g", "e0", objective("e2e")...), false},
		{alert("LLMErrorBudgetBurn6h", "critical", "g", "e0", objective("ttft")...), true},
		{alert("LLMErrorBudgetBurn6h", "critical", "g", "e0", objective("tpot")...), true},
		{alert("LLMErrorBudgetBurn6h", "critical", "g", "e0", objective("e2e")...), true},
		{alert("LLMErrorBudgetBurn1d", "warning", "g", "e0", objective("ttft")...), true},
		{alert("LLMErrorBudgetBurn6h", "critical", "g", "e1", objective("ttft")...), false},
		// A slower window never mutes a faster one, nor a ticket a page:
		// on node h the 1d ticket is muted by the 6h page, not the other
		// way round.
		{alert("LLMErrorBudgetBurn6h", "critical", "h", "e0", objective("ttft")...), false},
		{alert("LLMErrorBudgetBurn1d", "warning", "h", "e0", objective("ttft")...), true},
	}
	type postAlert struct {
		Labels   map[string]string `json:"labels"`
		StartsAt time.Time         `json:"startsAt"`
		EndsAt   time.Time         `json:"endsAt"`
	}
	var post []postAlert
	now := time.Now()
	for _, c := range cases {
		post = append(post, postAlert{c.labels, now.Add(-time.Minute), now.Add(time.Hour)})
	}
	body, _ := json.Marshal(post)
	resp, err := http.Post(base+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post alerts: %v %v\n%s", err, resp, logs.String())
	}
	resp.Body.Close()
	key := func(l map[string]string) string {
		var k []string
		for n, v := range l {
			k = append(k, n+"="+v)
		}
		sort.Strings(k)
		return strings.Join(k, ",")
	}
	want := map[string]bool{}
	for _, c := range cases {
		want[key(c.labels)] = c.inhibited
	}
	// Alertmanager's inhibitor learns of the source alerts
	// asynchronously: ask until the answer is complete and right, or 30 s
	// have passed.
	var problems []string
	pages := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		var got []struct {
			Labels map[string]string
			Status struct {
				State       string
				InhibitedBy []string
			}
		}
		resp, err := http.Get(base + "/api/v2/alerts")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		problems, pages = nil, 0
		if len(got) != len(cases) {
			problems = append(problems, fmt.Sprintf("alertmanager holds %d alerts, posted %d", len(got), len(cases)))
		}
		for _, a := range got {
			inhibited := len(a.Status.InhibitedBy) > 0
			if w, ok := want[key(a.Labels)]; !ok || w != inhibited {
				problems = append(problems, fmt.Sprintf("%s %s: inhibited %v (state %s), want %v", a.Labels["alertname"], key(a.Labels), inhibited, a.Status.State, w))
			}
			if a.Labels["node"] == "a" && a.Labels["target"] == "e0" && !inhibited {
				pages++
			}
		}
		if len(problems) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if pages != 1 {
		t.Errorf("a killed engine notifies %d alerts, want 1", pages)
	}
	// Notifications are per group: on node g, e0, the overload is one.
	var groups []struct {
		Labels map[string]string
		Alerts []struct {
			Labels map[string]string
			Status struct{ InhibitedBy []string }
		}
	}
	resp, err = http.Get(base + "/api/v2/alerts/groups")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&groups)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	notified := map[string][]string{}
	for _, g := range groups {
		for _, a := range g.Alerts {
			if len(a.Status.InhibitedBy) == 0 {
				k := a.Labels["node"] + "/" + a.Labels["target"]
				notified[k] = append(notified[k], key(g.Labels))
				break
			}
		}
	}
	for k, want := range map[string]int{"g/e0": 1, "g/e1": 1, "a/e0": 1} {
		if len(notified[k]) != want {
			t.Errorf("%s: %d notifications (groups %v), want %d", k, len(notified[k]), notified[k], want)
		}
	}
}
