package exporter

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// crossOrigin says why a state-changing request (POST /-/reload, the
// demo's levers) must be refused as coming from another site's page, or
// "" when it may proceed. A browser sends Origin (and usually Referer)
// with a POST; a page elsewhere can send a text/plain POST without a
// preflight, and to a plain-HTTP, non-localhost address it sends no
// Sec-Fetch-Site. So Origin and Referer are compared with the Host the
// request was sent to, whatever Sec-Fetch-Site says; Sec-Fetch-Site is
// only a further reason to refuse. A request with none of the three
// (curl, a script, a sidecar) proceeds, as Prometheus' own /-/reload does.
// Behind a proxy that rewrites Host, a browser's request is refused:
// reload with a client that sends no Origin, or with SIGHUP.
func crossOrigin(r *http.Request) string {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Sprintf("Sec-Fetch-Site is %q", site)
	}
	for _, h := range []string{"Origin", "Referer"} {
		vs := r.Header.Values(h)
		for _, v := range vs {
			if !sameHost(v, r) {
				return fmt.Sprintf("%s %q is not this address (%s)", h, v, r.Host)
			}
		}
	}
	return ""
}

// sameHost says whether the origin or referer v names the host and port
// the request was sent to. Schemes are not compared: the same host
// reached over http and https is the same site, and a proxy that ends
// TLS changes the scheme the daemon sees.
func sameHost(v string, r *http.Request) bool {
	u, err := url.Parse(v)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (a sandboxed page, a file), garbage
	}
	return strings.EqualFold(hostPort(u.Host, u.Scheme), hostPort(r.Host, u.Scheme))
}

// hostPort writes host with its port, the scheme's default when absent.
func hostPort(h, scheme string) string {
	if host, port, err := net.SplitHostPort(h); err == nil {
		return net.JoinHostPort(host, port)
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), port)
}

// foreignHost says why a state-changing request must be refused for the
// Host it names, or "" when that Host is one the daemon is known by. An
// origin check alone compares the Origin with the request's own Host,
// which a DNS-rebinding page controls: evil.example re-resolved to the
// daemon's address sends Host and Origin both evil.example. A rebinding
// page can only ever name a host by a DNS name, so an IP literal is
// accepted, as are localhost names, the machine's host name and the names
// in hosts (the host of each --web.listen-address, and --web.allowed-host);
// any other name is refused, browser or not.
func foreignHost(r *http.Request, hosts []string) string {
	name := r.Host
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	if name == "" {
		return "" // HTTP/1.0 without Host: no browser sends that
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return ""
	}
	lower := strings.ToLower(name)
	if lower == "localhost" || strings.HasSuffix(lower, ".localhost") {
		return ""
	}
	for _, h := range hosts {
		if strings.EqualFold(strings.TrimSuffix(h, "."), name) {
			return ""
		}
	}
	return fmt.Sprintf("Host %q is not an address of this daemon (an IP address, localhost, its host name, a --web.listen-address host or a --web.allowed-host)", r.Host)
}

// refuseWrite says why a state-changing request is refused: for its Host
// (DNS rebinding) or its origin (another site's page), or "".
func (e *Exporter) refuseWrite(r *http.Request) string {
	if why := foreignHost(r, e.hosts); why != "" {
		return why
	}
	return crossOrigin(r)
}
