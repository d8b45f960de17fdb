package collector

import (
	"os"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// The support matrix of docs/metrics.md must say what Support says,
// series by series.
func TestDocsSupportMatrix(t *testing.T) {
	raw, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(raw), "| series | vllm | sglang | llamacpp | tgi | triton | trtllm | dynamo |")
	if !ok {
		t.Fatal("docs/metrics.md has no support matrix")
	}
	rows := 0
	for _, line := range strings.Split(after, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.Trim(line, "| "), "|")
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		for i, e := range snapshot.Engines {
			want := Support(e)[name]
			got := strings.TrimSpace(cells[i+1]) == "✓"
			if got != want {
				t.Errorf("docs/metrics.md says %s on %s is %v, the code says %v", name, e, got, want)
			}
		}
		rows++
	}
	if rows != len(Support(snapshot.VLLM)) {
		t.Errorf("docs/metrics.md lists %d series, the contract has %d", rows, len(Support(snapshot.VLLM)))
	}
}
