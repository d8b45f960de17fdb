package collector

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// A Capturer reads a file of a real capture (its engine detected from
// the body, the snapshot named after the target) and scrapes a URL with
// one scraper; a file no engine wrote is refused with what to do.
func TestCapturer(t *testing.T) {
	path := filepath.Join("testdata", "fixtures", "sglang", "sglang-from-source.prom")
	c := &Capturer{Target: "t", MaxBody: 1 << 20}
	snap, err := c.Take(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Engine != snapshot.SGLang || snap.Target != "t" || len(snap.Models) == 0 {
		t.Errorf("file: engine %q, target %q, %d models", snap.Engine, snap.Target, len(snap.Models))
	}

	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits++; w.Write(body) }))
	defer srv.Close()
	u := &Capturer{Target: "u", MaxBody: 1 << 20}
	for range 2 {
		if snap, err = u.Take(context.Background(), srv.URL); err != nil || snap.Engine != snapshot.SGLang {
			t.Fatalf("URL: %v, engine %q", err, snap.Engine)
		}
	}
	if hits != 2 || u.scraper == nil || u.parser != nil {
		t.Errorf("URL taken twice: %d requests, scraper kept %v, parser %v", hits, u.scraper != nil, u.parser != nil)
	}

	junk := filepath.Join(t.TempDir(), "junk.prom")
	os.WriteFile(junk, []byte("node_cpu_seconds_total 1\n"), 0o644)
	if _, err := (&Capturer{}).Take(context.Background(), junk); err == nil || !strings.Contains(err.Error(), "pass --engine") {
		t.Errorf("a body no engine wrote: %v", err)
	}
}
