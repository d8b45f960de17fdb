package exporter

import (
	"fmt"
	"net/http"
	"sync"
)

// Note is a section of the status page about the daemon itself rather
// than one target (service discovery's health, say).
type Note struct {
	Title   string
	Failing bool
	Lines   []string
}

// extras are the readiness checks and status notes that other parts of
// the daemon (service discovery) add; the zero value has none.
type extras struct {
	mu     sync.Mutex
	checks []func() error
	notes  []func() Note
}

// AddReadyCheck adds a condition of /-/ready: while check returns an
// error, /-/ready answers 503 with it.
func (e *Exporter) AddReadyCheck(check func() error) {
	e.extras.mu.Lock()
	e.extras.checks = append(e.extras.checks, check)
	e.extras.mu.Unlock()
}

// AddNote adds a section to the status page, computed at each view.
func (e *Exporter) AddNote(note func() Note) {
	e.extras.mu.Lock()
	e.extras.notes = append(e.extras.notes, note)
	e.extras.mu.Unlock()
}

func (e *Exporter) ready(w http.ResponseWriter, _ *http.Request) {
	e.extras.mu.Lock()
	checks := append([]func() error(nil), e.extras.checks...)
	e.extras.mu.Unlock()
	for _, c := range checks {
		if err := c(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	fmt.Fprintln(w, "OK")
}

func (e *Exporter) statusNotes() []Note {
	e.extras.mu.Lock()
	fs := append([]func() Note(nil), e.extras.notes...)
	e.extras.mu.Unlock()
	out := make([]Note, 0, len(fs))
	for _, f := range fs {
		out = append(out, f())
	}
	return out
}
