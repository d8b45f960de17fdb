package exporter

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// /-/ready answers 503 with the reason while a readiness check fails, and
// the status page shows the notes, escaped.
func TestReadyChecksAndNotes(t *testing.T) {
	e := New(Options{Interval: time.Second, Timeout: time.Second})
	srv := httptest.NewServer(e.Handler("/metrics", nil))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/-/ready"); code != http.StatusOK {
		t.Errorf("/-/ready without checks: %d", code)
	}
	var synced atomic.Bool
	e.AddReadyCheck(func() error {
		if synced.Load() {
			return nil
		}
		return errors.New("discovery has not listed the pods yet")
	})
	if code, body := get("/-/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "has not listed the pods yet") {
		t.Errorf("/-/ready with a failing check: %d %q", code, body)
	}
	synced.Store(true)
	if code, _ := get("/-/ready"); code != http.StatusOK {
		t.Errorf("/-/ready once the check passes: %d", code)
	}
	if code, _ := get("/-/healthy"); code != http.StatusOK {
		t.Errorf("/-/healthy: %d", code)
	}
	e.AddNote(func() Note {
		return Note{Title: "Kubernetes discovery, node n1", Failing: true, Lines: []string{"cannot scrape pod llm/<x> (port)"}}
	})
	_, page := get("/")
	for _, want := range []string{`<section class="note failing"><h2>Kubernetes discovery, node n1</h2>`, "cannot scrape pod llm/&lt;x&gt; (port)"} {
		if !strings.Contains(page, want) {
			t.Errorf("status page lacks %q", want)
		}
	}
}
