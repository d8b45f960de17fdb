package exporter

import (
	"fmt"
	"html/template"
	"net/http"
	"time"
)

// Handler serves /metrics (at telemetryPath), the landing page, and
// /-/reload (only with Options.EnableLifecycle), /-/healthy, /-/ready.
func (e *Exporter) Handler(telemetryPath string, load Loader) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(telemetryPath, e.render)
	mux.HandleFunc("/-/reload", func(w http.ResponseWriter, r *http.Request) {
		if !e.opts.EnableLifecycle {
			// Prometheus' own words, so that tooling written for it reads us.
			http.Error(w, "Lifecycle API is not enabled.", http.StatusForbidden)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			// A browser page elsewhere posting a simple request: CORS does
			// not stop a text/plain POST from being sent, so refuse it here.
			http.Error(w, "cross-site reload refused", http.StatusForbidden)
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
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "OK") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		e.landing(w, telemetryPath)
	})
	return mux
}

type landingRow struct {
	Name, URL, Engine, State, Age, Error string
	FamilyErrors                         []string
	// Verdict is the failure-mode classifier's answer, Evidence its
	// reasons (see diagnosis.go).
	Verdict  string
	Evidence []string
}

var landingTmpl = template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>goodput-exporter</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}.down{color:#b00}.up{color:#070}</style>
</head><body>
<h1>goodput-exporter</h1>
<p>Goodput, KV-cache pressure and failure-mode signals for LLM inference engines. <a href="{{.Path}}">Metrics</a></p>
<h2>Targets</h2>
<table><tr><th>target</th><th>url</th><th>engine</th><th>state</th><th>last scrape</th><th>last error</th><th>failure mode</th></tr>
{{range .Rows}}<tr><td>{{.Name}}</td><td>{{.URL}}</td><td>{{.Engine}}</td><td class="{{.State}}">{{.State}}</td><td>{{.Age}}</td><td>{{.Error}}{{range .FamilyErrors}}<br>{{.}}{{end}}</td><td><strong>{{.Verdict}}</strong>{{range .Evidence}}<br><small>{{.}}</small>{{end}}</td></tr>
{{else}}<tr><td colspan="7">no targets configured (use --config.file or --target NAME=URL)</td></tr>{{end}}
</table></body></html>
`))

func (e *Exporter) landing(w http.ResponseWriter, path string) {
	var rows []landingRow
	for _, t := range e.sortedTargets() {
		st := t.snapshotState()
		row := landingRow{Name: t.cfg.Name, URL: t.cfg.URL, Engine: string(st.engine), State: "pending", Age: "never"}
		if row.Engine == "" {
			row.Engine = t.cfg.Engine
		}
		if st.attempted {
			row.State = "down"
			if st.up {
				row.State = "up"
			}
			row.Age = time.Since(st.lastScrape).Round(time.Millisecond).String() + " ago"
		}
		if !st.up {
			row.Error = st.lastErr
		}
		row.FamilyErrors = st.familyErrs
		row.Verdict, row.Evidence = verdictText(t)
		rows = append(rows, row)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	landingTmpl.Execute(w, struct {
		Path string
		Rows []landingRow
	}{path, rows})
}
