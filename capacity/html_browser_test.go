package capacity

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/internal/chromium"
)

var screenshot = flag.String("capacity.screenshot", "", "write a PNG of the worked example's HTML report to this file (docs/capacity-report.png)")

// geometry is what the browser laid out: each label's centre on screen
// and each mark's.
type geometry struct {
	XTicks    map[string]float64 `json:"xticks"` // label → centre x
	YTicks    map[string]float64 `json:"yticks"` // label → centre y
	Knee      *[2]float64        `json:"knee"`
	KneeLineX *float64           `json:"kneeLine"`
	SafeX     *float64           `json:"safe"`
	Threshold *float64           `json:"threshold"`
	Marks     []struct {
		Class string  `json:"class"`
		Round int     `json:"round"`
		X     float64 `json:"x"`
		Y     float64 `json:"y"`
	} `json:"marks"`
}

const geometryJS = `(id) => {
  const svg = document.getElementById(id);
  const c = (el) => { const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; };
  const g = {xticks: {}, yticks: {}, marks: []};
  svg.querySelectorAll('text.xtick').forEach(t => g.xticks[t.textContent] = c(t)[0]);
  svg.querySelectorAll('text.ytick').forEach(t => g.yticks[t.textContent] = c(t)[1]);
  const k = svg.querySelector('circle.knee'); if (k) g.knee = c(k);
  const kl = svg.querySelector('line.knee'); if (kl) g.kneeLine = c(kl)[0];
  const s = svg.querySelector('line.safe'); if (s) g.safe = c(s)[0];
  const th = svg.querySelector('line.threshold'); if (th) g.threshold = c(th)[1];
  svg.querySelectorAll('circle[data-round]').forEach(m => { const [x, y] = c(m); g.marks.push({class: m.getAttribute('class'), round: +m.dataset.round, x: x, y: y}); });
  return JSON.stringify(g);
}`

func layout(t *testing.T, p *chromium.Page, id string) geometry {
	t.Helper()
	var g geometry
	if err := json.Unmarshal([]byte(p.String("("+geometryJS+")("+strconv.Quote(id)+")")), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// yAt is where value v lies on screen, by the axis' own tick labels: a
// straight line through the lowest and highest label.
func (g geometry) yAt(t *testing.T, v float64) float64 {
	t.Helper()
	lo, hi := math.Inf(1), math.Inf(-1)
	var ylo, yhi float64
	for label, y := range g.YTicks {
		f, err := strconv.ParseFloat(strings.ReplaceAll(label, ",", ""), 64)
		if err != nil {
			t.Fatalf("y tick %q", label)
		}
		if f < lo {
			lo, ylo = f, y
		}
		if f > hi {
			hi, yhi = f, y
		}
	}
	return ylo + (v-lo)/(hi-lo)*(yhi-ylo)
}

func near(a, b, px float64) bool { return math.Abs(a-b) <= px }

func openReport(t *testing.T, files ...string) *chromium.Page {
	t.Helper()
	chromium.Path(t)
	var text, page bytes.Buffer
	if err := Report(&text, ReportOptions{Files: files, SLO: chatSLO, HTML: &page}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(page.Bytes(), []byte("<script")) || bytes.Contains(page.Bytes(), []byte("src=")) || bytes.Contains(page.Bytes(), []byte("href=")) {
		t.Error("the page is not self-contained")
	}
	f := filepath.Join(t.TempDir(), "capacity.html")
	if err := os.WriteFile(f, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := chromium.Open(t, "file://"+f, 1400, 1100)
	p.WaitFor("the charts", `document.querySelectorAll('svg').length >= 2`, 20*time.Second)
	return p
}

// TestHTMLReportInBrowser: the worked example's page, laid out by a real
// browser. The knee mark sits over the axis label "17" (the worked
// example's knee, 17 req/s) at the height the y axis' own labels give
// 3,330 tok/s; the safe capacity line is at 17 too; on the TTFT chart
// the threshold line is at 500 ms by the axis' labels, each round's mark
// is at its P99 TTFT as the file publishes it (read here by a second
// path), and the marks above the line are rounds 7 to 10, the table's
// missed rounds.
func TestHTMLReportInBrowser(t *testing.T) {
	file := "testdata/constructed/guidellm/benchmarks.json"
	p := openReport(t, file)
	g := layout(t, p, "s0-goodput")
	x17, ok := g.XTicks["17"]
	if !ok || g.Knee == nil || g.SafeX == nil || g.KneeLineX == nil {
		t.Fatalf("marks missing: %+v", g)
	}
	if !near(g.Knee[0], x17, 1) || !near(*g.KneeLineX, x17, 1) || !near(*g.SafeX, x17, 1) {
		t.Errorf("knee at x %v, knee line %v, safe line %v; the label 17 is at %v", g.Knee[0], *g.KneeLineX, *g.SafeX, x17)
	}
	if want := g.yAt(t, 3330); !near(g.Knee[1], want, 1.5) {
		t.Errorf("knee at y %v; 3,330 tok/s is at %v by the axis", g.Knee[1], want)
	}
	l := layout(t, p, "s0-o0")
	if l.Threshold == nil || !near(*l.Threshold, l.yAt(t, 500), 1.5) {
		t.Fatalf("threshold at %v, 500 ms at %v (ticks %v)", *l.Threshold, l.yAt(t, 500), l.YTicks)
	}
	var above []int
	for _, m := range l.Marks {
		p99 := rawField(t, file, "benchmarks", m.Round-1, "metrics", "time_to_first_token_ms", "successful", "percentiles", "p99")
		if want := l.yAt(t, p99); !near(m.Y, want, 1.5) {
			t.Errorf("round %d's TTFT mark at y %v; its P99 %v ms is at %v", m.Round, m.Y, p99, want)
		}
		if m.Y < *l.Threshold {
			above = append(above, m.Round)
		}
	}
	var missed []int
	var verdicts []string
	_ = json.Unmarshal([]byte(p.String(`JSON.stringify([...document.querySelectorAll('#s0 tbody td.verdict')].map(td => td.textContent))`)), &verdicts)
	for i, v := range verdicts {
		if strings.HasPrefix(v, "missed") {
			missed = append(missed, i+1)
		}
	}
	if want := []int{7, 8, 9, 10}; !equalInts(above, want) || !equalInts(missed, want) {
		t.Errorf("marks above the threshold %v, table's missed rounds %v; want %v", above, missed, want)
	}
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, p.Screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHTMLReportFailedRound: rounds 1 to 6 of the worked example and the
// real run in which every request failed (rate inf): the failed round is
// drawn past the highest set rate, at "max", with no goodput; it has no
// TTFT mark (no request to measure); the knee, now reached, is at 17.
func TestHTMLReportFailedRound(t *testing.T) {
	files := append(glob(t, "testdata/constructed/vllm/round0[1-6].json"), realDir+"vllm/vllm-bench-serve-v0.25.1-all-failed.json")
	p := openReport(t, files...)
	g := layout(t, p, "s0-goodput")
	xmax, ok := g.XTicks["max"]
	if !ok || g.Knee == nil || !near(g.Knee[0], g.XTicks["17"], 1) || xmax <= g.XTicks["17"] {
		t.Fatalf("ticks %v, knee %v", g.XTicks, g.Knee)
	}
	for _, m := range g.Marks {
		if m.Round == 7 && m.Class == "goodput" && (!near(m.X, xmax, 1) || !near(m.Y, g.yAt(t, 0), 1.5)) {
			t.Errorf("the failed round's goodput mark at %v,%v; want x %v at 0 tok/s (%v)", m.X, m.Y, xmax, g.yAt(t, 0))
		}
	}
	for _, m := range layout(t, p, "s0-o0").Marks {
		if m.Round == 7 {
			t.Error("the failed round has a TTFT mark")
		}
	}
	if txt := p.String(`document.querySelector('#s0 .verdict').textContent`); !strings.HasPrefix(txt, "knee: round 6") {
		t.Errorf("verdict %q", txt)
	}
	if n := p.String(`String(document.querySelectorAll('#s0 ul.audit li').length) + " " + document.querySelector('#s0 ul.facts').textContent`); !strings.HasPrefix(n, "8 ") ||
		!strings.Contains(n, "facebook/opt-125m") {
		t.Errorf("audit lines and facts: %q", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
