package exporter

import (
	"fmt"
	"net/http"
	"net/http/pprof"
)

// Handler serves /metrics (at telemetryPath), the status page at / with
// its assets under /static/, /-/reload (only with
// Options.EnableLifecycle), /-/healthy, /-/ready, and POST /-/lever (only
// with Options.Levers, the demo).
func (e *Exporter) Handler(telemetryPath string, load Loader) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(telemetryPath, e.render)
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if !e.opts.EnableLifecycle {
			// Prometheus' own words, so that tooling written for it reads us.
			http.Error(w, "Lifecycle API is not enabled.", http.StatusForbidden)
			return
		}
		if why := e.refuseWrite(r); why != "" {
			// A browser page elsewhere posting a simple request: CORS does
			// not stop a text/plain POST from being sent, so refuse it here.
			http.Error(w, "cross-site reload refused: "+why, http.StatusForbidden)
			return
		}
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			w.Header().Set("Allow", "POST, PUT")
			http.Error(w, "use POST to reload the configuration", http.StatusMethodNotAllowed)
			return
		}
		if load == nil {
			http.Error(w, "no configuration file to reload", http.StatusBadRequest)
			return
		}
		if err := e.Reload(load); err != nil {
			http.Error(w, fmt.Sprintf("reload failed, running configuration kept:\n%v", err), http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "configuration reloaded")
	})
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	mux.HandleFunc("/-/ready", e.ready)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		e.statusPage(w, telemetryPath)
	})
	mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(staticFS)))
	if e.opts.Levers != nil {
		mux.HandleFunc("/-/lever", e.leverHandler)
	}
	if e.opts.EnablePprof {
		// Registered on this mux, not http.DefaultServeMux: off unless asked.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}
