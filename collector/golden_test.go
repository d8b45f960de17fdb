package collector

import (
	"bytes"
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// snapCollector exposes one snapshot through a registry, as the exporter does.
type snapCollector struct {
	d    *Descs
	snap *snapshot.Snapshot
}

func (snapCollector) Describe(chan<- *prometheus.Desc) {}
func (c snapCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.d.Up, prometheus.GaugeValue, 1, string(c.snap.Engine))
	c.d.Collect(ch, c.snap)
}

// fixtures lists the copied real captures by engine directory.
func fixtures(t *testing.T) map[snapshot.Engine][]string {
	t.Helper()
	out := map[snapshot.Engine][]string{}
	for _, e := range snapshot.Engines {
		files, err := filepath.Glob(filepath.Join("testdata", "fixtures", string(e), "*.prom"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures for %s: %v", e, err)
		}
		out[e] = files
	}
	return out
}

func serveFile(t *testing.T, path, contentType string) *httptest.Server {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func scrapeOnce(t *testing.T, url string, engine snapshot.Engine) (*snapshot.Snapshot, Result) {
	t.Helper()
	sc, err := NewScraper(ScraperConfig{Name: "t1", URL: url, Engine: engine, Timeout: 5 * time.Second, MaxBody: 32 << 20,
		Parse: ParseOptions{DefaultModel: "unknown", ModelLimit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	snap, res, err := sc.Scrape(context.Background())
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return snap, res
}

// TestFixturesGolden runs every real capture through its adapter, served
// over HTTP with engine detection on, and compares the normalized series
// and the per-family errors with golden files.
func TestFixturesGolden(t *testing.T) {
	for engine, files := range fixtures(t) {
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".prom")
			t.Run(string(engine)+"/"+name, func(t *testing.T) {
				srv := serveFile(t, f, "text/plain; version=0.0.4; charset=utf-8")
				snap, res := scrapeOnce(t, srv.URL, "")
				if res.Detected != engine {
					t.Fatalf("detected %q, want %q", res.Detected, engine)
				}
				if len(snap.Models) == 0 {
					t.Fatal("no model read from a real capture")
				}
				reg := prometheus.NewPedanticRegistry()
				reg.MustRegister(snapCollector{NewDescs("t1", nil), snap})
				golden := filepath.Join("testdata", "golden", string(engine), name+".prom")
				errGolden := filepath.Join("testdata", "golden", string(engine), name+".errors")
				var errText strings.Builder
				for _, e := range snap.Errors {
					errText.WriteString(e.Error() + "\n")
				}
				if *update {
					writeGolden(t, reg, golden)
					if err := os.WriteFile(errGolden, []byte(errText.String()), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create)", err)
				}
				if err := testutil.GatherAndCompare(reg, bytes.NewReader(want)); err != nil {
					t.Error(err)
				}
				wantErr, err := os.ReadFile(errGolden)
				if err != nil {
					t.Fatal(err)
				}
				if got := errText.String(); got != string(wantErr) {
					t.Errorf("family errors:\n%s\nwant:\n%s", got, wantErr)
				}
			})
		}
	}
}

func writeGolden(t *testing.T, g prometheus.Gatherer, path string) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
