package collector

import (
	"fmt"
	"sort"
	"strings"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Reasons a body that was read and parsed still leaves its target down:
// nothing in it is the engine's, so "up" would hide an outage.
const (
	// ReasonWrongEngine: the body holds none of the configured engine's
	// families, but another engine's.
	ReasonWrongEngine = "wrong_engine"
	// ReasonNoFamilies: the body holds none of the engine's families and
	// no other engine's (a Ray Serve ray_vllm: prefix, an application's
	// own metrics).
	ReasonNoFamilies = "no_families"
	// ReasonSelfScrape: the body is a goodput-exporter's own /metrics.
	ReasonSelfScrape = "self_scrape"
)

// selfPrefix is the prefix of the families only a goodput-exporter
// serves (its own series; no engine uses it).
var selfPrefix = []byte("goodput_exporter_")

// isExporterBody says whether body is a goodput-exporter's own /metrics.
func isExporterBody(body []byte) bool { return lineStartIndex(body, selfPrefix) >= 0 }

// familyNames lists the names of the families the table reads, aliases
// included, sorted.
func (t *table) familyNames() []string {
	seen := map[string]bool{}
	for n, ref := range t.samples {
		if ref.part != partValue {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				n = strings.TrimSuffix(n, suf)
			}
		}
		seen[n] = true
	}
	for n := range t.selected {
		seen[n] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// holdsFamilies says whether body has a sample or TYPE line of one of the
// families the table reads.
func (t *table) holdsFamilies(body []byte) bool {
	for _, n := range t.familyNames() {
		if lineStartIndex(body, []byte(n)) >= 0 {
			return true
		}
	}
	return false
}

// judgeEmpty says why a parsed snapshot with no model must leave its
// target down, or nil: an engine that is idle still shows its families
// (their TYPE lines at least), so a body with none of them is not this
// engine's /metrics.
func judgeEmpty(t *table, body []byte, snap *snapshot.Snapshot) error {
	if len(snap.Models) > 0 || t.holdsFamilies(body) {
		return nil
	}
	if other, ok := Detect(body); ok && other != t.engine {
		return &ScrapeError{ReasonWrongEngine, fmt.Errorf("the body holds none of %s's families but %s's: set engine: %s, or point the target at a %s engine", t.engine, other, other, t.engine)}
	}
	names := t.familyNames()
	return &ScrapeError{ReasonNoFamilies, fmt.Errorf("the body (%d bytes) holds none of %s's %d families (e.g. %s); is the URL the engine's own /metrics? (a prefix such as Ray Serve's ray_vllm: is not read)", len(body), t.engine, len(names), names[0])}
}

// selfScrape is the error of a target whose body is a goodput-exporter's.
func selfScrape(body []byte) error {
	if !isExporterBody(body) {
		return nil
	}
	return &ScrapeError{ReasonSelfScrape, fmt.Errorf("the URL serves a goodput-exporter's own /metrics (%s… series), not an engine's: scraping it would read the daemon's output back", selfPrefix)}
}
