package config

import (
	"errors"
	"net/url"
	"slices"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/internal/testbody"
)

// FuzzParse feeds the configuration decoder arbitrary documents, seeded
// with every file under testdata (good and bad). It must not panic; a
// rejected document is an Errors with at least one entry; an accepted one
// has what the daemon relies on: unique named targets with an http(s) URL
// and a host, a known engine, a positive body cap and model limit, and SLO
// objectives with targets strictly between 0 and 1.
func FuzzParse(f *testing.F) {
	for _, b := range testbody.Files(f, "testdata/*.yml") {
		f.Add(b)
	}
	f.Add([]byte("targets: [{name: a, url: 'http://[::1]:8000/metrics', max_body_size: 1KiB}]\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("rejected without a listed error: %T %v", err, err)
			}
			return
		}
		names := map[string]bool{}
		for _, tg := range cfg.Targets {
			if tg.Name == "" || names[tg.Name] {
				t.Fatalf("target name %q empty or repeated", tg.Name)
			}
			names[tg.Name] = true
			u, err := url.Parse(tg.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				t.Fatalf("target %q: URL %q accepted", tg.Name, tg.URL)
			}
			if !slices.Contains(engineNames, tg.Engine) || tg.MaxBodySize <= 0 || tg.ModelLimit <= 0 {
				t.Fatalf("target %q: engine %q, body cap %d, model limit %d", tg.Name, tg.Engine, tg.MaxBodySize, tg.ModelLimit)
			}
		}
		for _, s := range cfg.GoodputSLOs() {
			for _, o := range s.Objectives {
				if !(o.Target > 0 && o.Target < 1) || o.Threshold < 0 {
					t.Fatalf("SLO %q objective %s: target %v, threshold %v", s.Name, o.Kind, o.Target, o.Threshold)
				}
			}
		}
	})
}
