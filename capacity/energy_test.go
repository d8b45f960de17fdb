package capacity

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeDCGM serves dcgm-exporter's energy counter (its HELP, TYPE and
// labels as dcgm-exporter writes them) for two GPUs drawing a known
// constant power: the counter is the energy in mJ since t0.
func fakeDCGM(t *testing.T, t0 time.Time, watts [2]float64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := time.Since(t0).Seconds()
		fmt.Fprintln(w, "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).")
		fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter")
		for i, p := range watts {
			fmt.Fprintf(w, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"%d\",UUID=\"GPU-%d\",device=\"nvidia%d\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gpu-node-7\"} %.0f\n",
				i, i, i, 1e9+p*1000*s)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startPrometheus runs Debian's Prometheus scraping target every second.
func startPrometheus(t *testing.T, target string) string {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("GOODPUT_REQUIRE_PROMETHEUS") != "" {
			t.Fatal("prometheus is required (GOODPUT_REQUIRE_PROMETHEUS is set): apt-get install prometheus")
		}
		t.Skip("prometheus not installed (apt-get install prometheus)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	_ = os.WriteFile(cfg, []byte(fmt.Sprintf("global: { scrape_interval: 1s, scrape_timeout: 900ms }\nscrape_configs:\n  - job_name: dcgm\n    static_configs: [{ targets: [%q] }]\n", target)), 0o644)
	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port), "--log.level=warn")
	var logb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready:\n%s", logb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// windowed writes the real GuideLLM 0.8 report with its two rounds' windows
// moved to the given times (the rest of the file as published).
func windowed(t *testing.T, windows [2][2]time.Time) string {
	var doc map[string]any
	if err := json.Unmarshal(must(os.ReadFile(realDir+"guidellm/v0.8.0.dev18-llm-d-constant2-4.json")), &doc); err != nil {
		t.Fatal(err)
	}
	for i, b := range doc["benchmarks"].([]any) {
		m := b.(map[string]any)
		s, e := windows[i][0], windows[i][1]
		m["start_time"], m["end_time"] = float64(s.UnixNano())/1e9, float64(e.UnixNano())/1e9
		m["duration"] = e.Sub(s).Seconds()
	}
	f := filepath.Join(t.TempDir(), "benchmarks.json")
	_ = os.WriteFile(f, must(json.Marshal(doc)), 0o644)
	return f
}

// TestEnergyFromPrometheus: a real Prometheus scrapes a fake DCGM exporter
// whose two GPUs draw 300 W and 150 W. A round whose 4 s window lies
// inside the scraped time gets 450 W × 4 s = 1,800 J (within 2 %: the
// scrape and the counter are a few ms apart); a round whose window is a
// minute before Prometheus started is said not to be covered, and gets no
// energy; a file with no absolute windows (vLLM) is said so, not guessed.
func TestEnergyFromPrometheus(t *testing.T) {
	t0 := time.Now()
	dcgm := fakeDCGM(t, t0, [2]float64{300, 150})
	url := startPrometheus(t, strings.TrimPrefix(dcgm.URL, "http://"))
	// Prometheus hands its targets to the scrapers a few seconds after it
	// is ready: the window opens once the series has samples.
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/api/v1/query?query=count_over_time(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[1m])")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(b, []byte(`"value"`)) && !bytes.Contains(b, []byte(`"1"]`)) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("prometheus has not scraped the fake DCGM exporter twice in 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	a := time.Now()
	b := a.Add(4 * time.Second)
	time.Sleep(time.Until(b.Add(2500 * time.Millisecond)))
	f := windowed(t, [2][2]time.Time{{a, b}, {t0.Add(-time.Minute), t0.Add(-56 * time.Second)}})

	sw, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	q := EnergyQuery{URL: url}
	if err := q.Attach(context.Background(), sw); err != nil {
		t.Fatal(err)
	}
	in, before := sw.Points[0], sw.Points[1]
	if want := 450 * b.Sub(a).Seconds(); !within(in.EnergyJoules, want, 0.02) || in.EnergyNote != "" {
		t.Errorf("covered round: %v J (%q), want %v J", in.EnergyJoules, in.EnergyNote, want)
	}
	if before.EnergyJoules != 0 || !strings.Contains(before.EnergyNote, "samples in the window") {
		t.Errorf("uncovered round: %v J, %q", before.EnergyJoules, before.EnergyNote)
	}
	// one GPU only, by its label
	sw, _ = Read(f)
	if err := (EnergyQuery{URL: url, Selector: `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1"}`}).Attach(context.Background(), sw); err != nil {
		t.Fatal(err)
	}
	if want := 150 * b.Sub(a).Seconds(); !within(sw.Points[0].EnergyJoules, want, 0.02) {
		t.Errorf("GPU 1: %v J, want %v", sw.Points[0].EnergyJoules, want)
	}
	// the report: power and joules per good token per round
	var out bytes.Buffer
	if err := Report(&out, ReportOptions{Files: []string{f}, SLO: chatSLO, Energy: &q}); err != nil {
		t.Fatal(err)
	}
	// round 1, the 2 req/s benchmark, has the window [a, b]: 450 W over
	// its goodput
	good := judge(t, f).Points[0].Goodput
	var row []string
	for _, l := range strings.Split(out.String(), "\n") {
		if fs := strings.Fields(l); len(fs) == 5 && fs[0] == "1" {
			row = fs
		}
	}
	// The power is read from a real Prometheus's samples of the fake
	// exporter, scraped on its own clock: 449 or 451 W is within its
	// resolution, as the energy is within 2 %.
	if len(row) != 5 || !within(must(strconv.ParseFloat(row[3], 64)), 450, 0.02) || !within(must(strconv.ParseFloat(row[4], 64)), 450/good, 0.02) {
		t.Errorf("round 1's energy row %q; want 450 W and %v J per good token:\n%s", row, 450/good, out.String())
	}
	if !strings.Contains(out.String(), "no series of the selector has samples in the window") {
		t.Errorf("the uncovered round is not said:\n%s", out.String())
	}
	// no absolute window: said, not guessed
	sw, _ = Read(realDir + "vllm/vllm-bench-serve-v0.25.1.json")
	if err := q.Attach(context.Background(), sw); err != nil || !strings.Contains(sw.Points[0].EnergyNote, "no absolute window") {
		t.Errorf("vLLM: %v %q", err, sw.Points[0].EnergyNote)
	}
	// an unreachable Prometheus is an error
	sw, _ = Read(f)
	if err := (EnergyQuery{URL: "http://127.0.0.1:1", Timeout: time.Second}).Attach(context.Background(), sw); err == nil {
		t.Error("unreachable Prometheus accepted")
	}
}
