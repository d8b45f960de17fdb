package gpu

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// serve answers each request with the next body (the last one repeats).
func serve(t *testing.T, bodies ...[]byte) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := min(int(n.Add(1))-1, len(bodies)-1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(bodies[i]) // a failed write shows up as the client's error
	}))
	t.Cleanup(srv.Close)
	return srv
}

func newTestExporter(t *testing.T, url string, opts DCGMExporterOptions) *DCGMExporter {
	t.Helper()
	opts.URL = url
	b, err := NewDCGMExporter(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every capture goes through the backend over HTTP and is compared with
// its golden rendering (go test -run TestDCGMExporterGolden -update).
func TestDCGMExporterGolden(t *testing.T) {
	captures, err := filepath.Glob("testdata/dcgm-exporter/*.prom")
	if err != nil || len(captures) < 7 {
		t.Fatalf("captures: %v %v", captures, err)
	}
	for _, capture := range captures {
		t.Run(filepath.Base(capture), func(t *testing.T) {
			body, err := os.ReadFile(capture)
			if err != nil {
				t.Fatal(err)
			}
			b := newTestExporter(t, serve(t, body).URL+"/metrics", DCGMExporterOptions{})
			devs, err := b.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := render(devs)
			golden := strings.TrimSuffix(capture, ".prom") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("%s:\n got:\n%s\nwant:\n%s", capture, got, want)
			}
		})
	}
}

// The A30 capture repeats each GPU's power on every MIG instance; each GPU
// must come out once, with the first value.
func TestDCGMExporterMIGDeduplicates(t *testing.T) {
	body, err := os.ReadFile("testdata/dcgm-exporter/issue317-2024-a30-mig-excerpts.prom")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := newTestExporter(t, serve(t, body).URL, DCGMExporterOptions{}).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 {
		t.Fatalf("%d devices, want 2 (one per physical GPU):\n%s", len(devs), render(devs))
	}
	if devs[0].PowerW.V != 52.636 || devs[1].PowerW.V != 56.121 {
		t.Errorf("power = %v, %v; want 52.636, 56.121", devs[0].PowerW, devs[1].PowerW)
	}
}

// Both host label spellings and both namespace spellings give the same
// readings and pods.
func TestDCGMExporterLabelVariants(t *testing.T) {
	read := func(name string) []Device {
		body, err := os.ReadFile("testdata/dcgm-exporter/" + name)
		if err != nil {
			t.Fatal(err)
		}
		devs, err := newTestExporter(t, serve(t, body).URL, DCGMExporterOptions{}).Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return devs
	}
	upper := read("dcgm-exporter-k8s-h100-from-source.prom")
	lower := read("variant-h100-lowercase-hostname.prom")
	old := read("variant-h100-old-namespace-clock-window.prom")
	for _, devs := range [][]Device{upper, lower, old} {
		if len(devs) != 2 || devs[0].UUID != "GPU-1111aaaa-2222-bbbb-3333-cccc4444dddd" || devs[0].PowerW.V != 612.437 ||
			devs[0].EnergyJ.V != 389215774.021 || len(devs[0].Pods) != 1 || devs[0].Pods[0] != (PodRef{Namespace: "llm", Pod: "vllm-0", Container: "vllm"}) ||
			len(devs[1].Pods) != 0 {
			t.Errorf("unexpected reading:\n%s", render(devs))
		}
	}
	if upper[0].MemTotalB != lower[0].MemTotalB || upper[0].Utilization != lower[0].Utilization {
		t.Errorf("Hostname and hostname captures differ:\n%s\n%s", render(upper), render(lower))
	}
	if got := old[0].Throttle.String(); got != "sw_power_cap,hw_thermal_slowdown" {
		t.Errorf("windowed clock events on GPU 0 = %s", got)
	}
	if got := old[1].Throttle.String(); got != "none" {
		t.Errorf("GPU 1 with an empty window = %s, want none (known, nothing active)", got)
	}
}

// DCGM_EXP_CLOCK_EVENTS_TOTAL counts reasons switching on: a reason is
// active when its total rose since the previous scrape, unknown before.
func TestDCGMExporterClockEventTotals(t *testing.T) {
	series := func(reason string, v string) string {
		return `DCGM_EXP_CLOCK_EVENTS_TOTAL{gpu="0",UUID="GPU-a",modelName="NVIDIA L4",Hostname="n",clock_event="` + reason + `"} ` + v + "\n"
	}
	head := "# TYPE DCGM_EXP_CLOCK_EVENTS_TOTAL counter\n"
	b := newTestExporter(t, serve(t,
		[]byte(head+series("power_cap", "4")+series("hw_slowdown", "1")),
		[]byte(head+series("power_cap", "6")+series("hw_slowdown", "1")),
		[]byte(head+series("power_cap", "6")+series("hw_slowdown", "1")),
	).URL, DCGMExporterOptions{})
	var got []string
	for range 3 {
		devs, err := b.Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, devs[0].Throttle.String())
	}
	if want := "absent sw_power_cap none"; strings.Join(got, " ") != want {
		t.Errorf("throttle over three scrapes = %v, want %s", got, want)
	}
}

func TestDCGMExporterErrors(t *testing.T) {
	if _, err := NewDCGMExporter(DCGMExporterOptions{URL: "localhost:9400"}); err == nil {
		t.Error("a URL without scheme was accepted")
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	big := serve(t, []byte(strings.Repeat("# padding comment line\n", 100)))
	garbage := serve(t, []byte("DCGM_FI_DEV_POWER_USAGE{gpu=\"0\" 12\n"))
	noGPU := serve(t, []byte("DCGM_FI_DEV_POWER_USAGE{UUID=\"GPU-a\"} 12\n"))
	for _, c := range []struct {
		name, url string
		opts      DCGMExporterOptions
		want      string
	}{
		{"status", notFound.URL, DCGMExporterOptions{}, "HTTP 404"},
		{"timeout", slow.URL, DCGMExporterOptions{Timeout: 50 * time.Millisecond}, "deadline exceeded"},
		{"body cap", big.URL, DCGMExporterOptions{MaxBodyBytes: 1000}, "body larger than 1000 bytes"},
		{"syntax", garbage.URL, DCGMExporterOptions{}, "parse dcgm-exporter metrics"},
		{"no gpu label", noGPU.URL, DCGMExporterOptions{}, "without a numeric gpu label"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := newTestExporter(t, c.url, c.opts).Collect(context.Background())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

// dcgm-exporter's default counters carry no default power limit; a
// counters file that adds DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF (field 163)
// gives it, here appended to the real L4 capture with that GPU's labels.
func TestDCGMExporterDefaultPowerLimit(t *testing.T) {
	body, err := os.ReadFile("testdata/dcgm-exporter/kops-conformance-2026-03-L4-default-counters.prom")
	if err != nil {
		t.Fatal(err)
	}
	devs, err := newTestExporter(t, serve(t, body).URL+"/metrics", DCGMExporterOptions{}).Collect(context.Background())
	if err != nil || len(devs) != 1 {
		t.Fatalf("%d GPUs, %v", len(devs), err)
	}
	if devs[0].PowerLimitDefaultW.OK {
		t.Fatalf("default counters: default limit %v, want absent", devs[0].PowerLimitDefaultW)
	}
	added := string(body) + "# HELP DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF Default power management limit (in W).\n" +
		"# TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF gauge\n" +
		`DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF{gpu="0",UUID="GPU-c2f76b33-7953-256e-8f33-1343419b1a1c",pci_bus_id="00000000:31:00.0",device="nvidia0",modelName="NVIDIA L4",Hostname="i-030791dc5a37cd257",DCGM_FI_DRIVER_VERSION="580.105.08"} 72.000000` + "\n"
	devs, err = newTestExporter(t, serve(t, []byte(added)).URL+"/metrics", DCGMExporterOptions{}).Collect(context.Background())
	if err != nil || len(devs) != 1 {
		t.Fatalf("%d GPUs, %v", len(devs), err)
	}
	if d := devs[0].PowerLimitDefaultW; !d.OK || d.V != 72 {
		t.Errorf("default limit %v, want 72", d)
	}
}
