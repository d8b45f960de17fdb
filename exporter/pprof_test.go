package exporter

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// /debug/pprof/ is served only with EnablePprof (--web.enable-pprof), on
// the daemon's own mux: the heap profile answers with it, 404 without.
func TestPprofOnlyWhenEnabled(t *testing.T) {
	for _, on := range []bool{false, true} {
		ex := New(Options{Interval: time.Second, EnablePprof: on})
		web := newWeb(t, ex.Handler("/metrics", nil))
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
			resp, err := http.Get(web.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case on && (resp.StatusCode != http.StatusOK || len(b) == 0):
				t.Errorf("pprof on, GET %s: %s, %d bytes, want 200 with a body", path, resp.Status, len(b))
			case on && path == "/debug/pprof/heap?debug=1" && !strings.Contains(string(b), "heap profile:"):
				t.Errorf("pprof on, heap profile is not one:\n%.200s", b)
			case !on && resp.StatusCode != http.StatusNotFound:
				t.Errorf("pprof off, GET %s: %s, want 404", path, resp.Status)
			}
		}
	}
}
