package exporter

import (
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// Loader produces a validated configuration (from the file and flags).
type Loader func() (*config.Config, error)

// Reload loads and applies a configuration. On any error the running
// configuration stays and the reload gauge drops to 0.
func (e *Exporter) Reload(load Loader) error {
	defer e.render.Invalidate() // the next /metrics shows the outcome
	cfg, err := load()
	if err == nil {
		err = e.ApplyConfig(cfg)
	}
	if err != nil {
		e.self.reloadOK.Set(0)
		e.logger.Error("configuration reload failed; keeping the running configuration", "err", err)
		return err
	}
	e.self.reloadOK.Set(1)
	e.self.reloadTimestamp.Set(float64(time.Now().UnixNano()) / 1e9)
	e.logger.Info("configuration loaded", "targets", len(cfg.Targets))
	return nil
}
