package exporter

import (
	"slices"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// SetDiscovered replaces the set of targets found by service discovery
// (Kubernetes pods on this node) and reconciles the running targets
// through the same path as a reload: new pods start, vanished ones stop
// and their series leave, unchanged ones keep running. Discovered and
// configured targets live side by side; a reload of the file keeps the
// discovered ones, and a discovered target whose name the file already
// uses is left out (the file wins) and logged once.
//
// Before Start it only records the set; Start's first load applies it.
func (e *Exporter) SetDiscovered(ts []config.Target) error {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()
	e.discovered = slices.Clone(ts)
	e.mu.Lock()
	file := e.fileCfg
	e.mu.Unlock()
	if file == nil {
		return nil
	}
	err := e.apply(file)
	e.render.Invalidate()
	return err
}

// withDiscovered is the configuration file's targets plus the discovered
// ones; reloadMu is held.
func (e *Exporter) withDiscovered(file *config.Config) *config.Config {
	cfg, clashed := file.WithDiscovered(e.discovered)
	for _, name := range clashed {
		e.warnOnce("discovered-clash:"+name, "a discovered target has the name of a configured one; the configured target is kept", "target", name)
	}
	return cfg
}
