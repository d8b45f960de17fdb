// Package webserve opens the daemon's listening sockets and serves HTTP on
// them through exporter-toolkit, which applies a web config file's TLS and
// basic auth (--web.config.file). The serve command's /metrics, the OTLP
// HTTP receiver and the demo's daemon use it; it depends on nothing in
// this module, and anything that serves HTTP may depend on it.
package webserve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
)

// CloseAll closes every listener.
func CloseAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

// ListenAll opens every address, or none.
func ListenAll(addrs []string) ([]net.Listener, error) {
	var listeners []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			CloseAll(listeners)
			return nil, fmt.Errorf("listening on %s: %w", a, err)
		}
		listeners = append(listeners, l)
	}
	return listeners, nil
}

// Serve serves srv on every listener, with webConfig's TLS and basic auth
// when webConfig names a file, until ctx ends (then it shuts srv down,
// giving requests in flight 5 s) or one listener fails.
func Serve(ctx context.Context, srv *http.Server, listeners []net.Listener, webConfig string, logger *slog.Logger) error {
	addrs := make([]string, len(listeners))
	for i, l := range listeners {
		addrs[i] = l.Addr().String()
	}
	noSystemd := false
	flags := &web.FlagConfig{WebListenAddresses: &addrs, WebSystemdSocket: &noSystemd, WebConfigFile: &webConfig}
	errc := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() { errc <- web.Serve(l, srv, flags, logger) }()
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	case err := <-errc:
		srv.Close()
		return err
	}
}
