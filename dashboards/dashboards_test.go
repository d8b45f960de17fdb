package dashboards

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/promtool"
)

var update = flag.Bool("update", false, "rewrite the committed dashboards")

// The committed JSON is what the code generates.
func TestOverviewIsGenerated(t *testing.T) {
	got, err := Overview()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if *update {
		if err := os.WriteFile("goodput-overview.json", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("goodput-overview.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("goodput-overview.json is stale: run go test ./dashboards -update")
	}
	var d struct {
		UID    string
		Panels []struct{ ID int }
	}
	if err := json.Unmarshal(want, &d); err != nil || d.UID != "goodput-overview" || len(d.Panels) < 10 {
		t.Fatalf("dashboard %+v: %v", d, err)
	}
	seen := map[int]bool{}
	for _, p := range d.Panels {
		if seen[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		seen[p.ID] = true
	}
}

// Every query parses under a real promtool, and uses only series the
// exporter or the shipped recording rules produce.
func TestQueriesParse(t *testing.T) {
	bin := promtool.Path(t)
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard-queries\n    rules:\n")
	for i, q := range Queries(overviewRows) {
		expr := strings.ReplaceAll(q, "$target", ".*")
		fmt.Fprintf(&b, "      - record: dashboard:query_%d:check\n        expr: %q\n", i, expr)
	}
	path := filepath.Join(t.TempDir(), "queries.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool: %v\n%s", err, out)
	}
	rules, err := os.ReadFile("../rules/goodput.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range Queries(overviewRows) {
		for _, rec := range []string{"target_model_slo_objective:llm_slo_attainment:ratio_rate5m", "target_model_slo_objective:llm_slo_burn_rate:ratio_rate5m", "target_slo_bound:llm_cost_per_million_good_tokens:ratio_rate5m"} {
			if strings.Contains(q, rec) && !bytes.Contains(rules, []byte("record: "+rec)) {
				t.Errorf("query uses %s, which no shipped rule records", rec)
			}
		}
	}
}
