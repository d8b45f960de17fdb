// Package fetch is the one HTTP client policy for everything the daemon
// fetches (engine /metrics, a dcgm-exporter): a bounded dial, no proxy
// unless one is configured (the environment's HTTP_PROXY is never read:
// what the daemon scrapes is on its node), no redirect off the configured
// host, and a cap on the decompressed body. The caller bounds each request
// with its context's deadline.
package fetch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// MaxRedirects is how many redirects on the same host a fetch follows.
const MaxRedirects = 5

var (
	// ErrRedirectOffHost is wrapped by a fetch that was redirected to
	// another host, or more than MaxRedirects times.
	ErrRedirectOffHost = errors.New("redirect off the target's host")
	// ErrBodyTooLarge is wrapped by ReadBody when the body exceeds its cap.
	ErrBodyTooLarge = errors.New("body too large")
)

// NewTransport returns the transport every fetch uses: dials bounded to
// 5 s, a few idle connections kept per host, gzip decoded transparently
// (the body cap applies to the decoded bytes), and proxy as the only
// proxy (nil: connect directly, whatever the environment says).
func NewTransport(proxy *url.URL) *http.Transport {
	t := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 2,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
	}
	if proxy != nil {
		t.Proxy = http.ProxyURL(proxy)
	}
	return t
}

// NewClient returns a client for one configured URL over rt (NewTransport
// when nil) that follows redirects only on that URL's host.
func NewClient(target string, rt http.RoundTripper) (*http.Client, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	if u.Host == "" {
		return nil, fmt.Errorf("URL %q has no host", target)
	}
	if rt == nil {
		rt = NewTransport(nil)
	}
	return &http.Client{Transport: rt, CheckRedirect: sameHost(u)}, nil
}

func sameHost(u *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != u.Host {
			return fmt.Errorf("%w: %s redirects to %s", ErrRedirectOffHost, u.Redacted(), req.URL.Redacted())
		}
		if len(via) > MaxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrRedirectOffHost, MaxRedirects)
		}
		return nil
	}
}

// ReadBody reads r into buf (after resetting it), at most max bytes: a
// longer body is an error wrapping ErrBodyTooLarge, found after reading
// max+1 bytes, never more.
func ReadBody(r io.Reader, max int64, buf *bytes.Buffer) (int64, error) {
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(r, max+1))
	if err != nil {
		return n, err
	}
	if n > max {
		return n, fmt.Errorf("%w: larger than the %d-byte cap", ErrBodyTooLarge, max)
	}
	return n, nil
}
