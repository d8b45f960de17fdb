package gpu

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/fetch"
)

// onePower is a minimal dcgm-exporter body: one GPU's power.
const onePower = "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA L4\",Hostname=\"n\"} 72.5\n"

// The dcgm-exporter backend fetches under the engines' policy: a redirect
// to another host is refused before that host is asked anything, a
// same-host redirect is followed, and the cap applies to the decompressed
// body (a gzip bomb is cut off at the cap).
func TestDCGMExporterFetchPolicy(t *testing.T) {
	good := []byte(onePower)
	var offHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		offHits.Add(1)
		w.Write(good)
	}))
	defer other.Close()

	// 8 MiB of comment lines compress to a few KiB.
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write([]byte(strings.Repeat("# padding padding padding padding\n", 8<<20/34)))
	zw.Close()
	if bomb.Len() > 64<<10 {
		t.Fatalf("bomb is %d bytes compressed", bomb.Len())
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/metrics", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write(good) })
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	_, err := newTestExporter(t, srv.URL+"/away", DCGMExporterOptions{}).Collect(ctx)
	if !errors.Is(err, fetch.ErrRedirectOffHost) {
		t.Errorf("off-host redirect: err = %v, want a refused redirect", err)
	}
	if n := offHits.Load(); n != 0 {
		t.Errorf("the other host was fetched %d times", n)
	}
	if devs, err := newTestExporter(t, srv.URL+"/moved", DCGMExporterOptions{}).Collect(ctx); err != nil || len(devs) != 1 {
		t.Errorf("same-host redirect: %d devices, err %v", len(devs), err)
	}
	_, err = newTestExporter(t, srv.URL+"/bomb", DCGMExporterOptions{MaxBodyBytes: 1 << 20}).Collect(ctx)
	if !errors.Is(err, fetch.ErrBodyTooLarge) || !strings.Contains(err.Error(), "body larger than 1048576 bytes") {
		t.Errorf("gzip bomb: err = %v, want the 1 MiB cap", err)
	}
}

// HTTP_PROXY in the environment is not used: a GPU backend on the node
// must not be fetched through a proxy meant for the outside world.
func TestDCGMExporterIgnoresEnvironmentProxy(t *testing.T) {
	var hits atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write([]byte(onePower))
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	// A name that does not resolve: only a proxy could answer it.
	_, err := newTestExporter(t, "http://dcgm-exporter.invalid:9400/metrics", DCGMExporterOptions{}).Collect(context.Background())
	if err == nil || hits.Load() != 0 {
		t.Errorf("fetched through the environment's proxy (%d hits, err %v)", hits.Load(), err)
	}
}
