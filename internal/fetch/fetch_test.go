package fetch

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// The transport never takes a proxy from the environment; a configured
// one is used.
func TestTransportProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.invalid:3128")
	t.Setenv("http_proxy", "http://proxy.invalid:3128")
	if NewTransport(nil).Proxy != nil {
		t.Fatal("a proxy function is set without a configured proxy")
	}
	var hits atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "via proxy for "+r.URL.Host)
	}))
	defer proxy.Close()
	pu, _ := url.Parse(proxy.URL)
	c, err := NewClient("http://engine.invalid:8000/metrics", NewTransport(pu))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get("http://engine.invalid:8000/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if hits.Load() != 1 || string(b) != "via proxy for engine.invalid:8000" {
		t.Errorf("configured proxy: %d hits, body %q", hits.Load(), b)
	}
}

// Redirects: followed on the same host, refused off it (before any request
// reaches the other host) and after MaxRedirects.
func TestClientRedirects(t *testing.T) {
	var offHits atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		offHits.Add(1)
		io.WriteString(w, "other host")
	}))
	defer other.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/metrics", http.StatusFound) })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) (string, error) {
		c, err := NewClient(srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if body, err := get("/old"); err != nil || body != "ok" {
		t.Errorf("same-host redirect: %q, %v", body, err)
	}
	if _, err := get("/away"); !errors.Is(err, ErrRedirectOffHost) {
		t.Errorf("off-host redirect: err = %v, want ErrRedirectOffHost", err)
	}
	if offHits.Load() != 0 {
		t.Errorf("the other host was fetched %d times", offHits.Load())
	}
	if _, err := get("/loop"); !errors.Is(err, ErrRedirectOffHost) || !strings.Contains(err.Error(), "more than 5 redirects") {
		t.Errorf("redirect loop: err = %v", err)
	}
	if _, err := NewClient("/metrics", nil); err == nil {
		t.Error("a URL without host was accepted")
	}
}

// ReadBody stops one byte past the cap: a body of exactly max is fine, one
// more byte is ErrBodyTooLarge, and an endless body reads max+1 bytes only.
func TestReadBody(t *testing.T) {
	var buf bytes.Buffer
	if n, err := ReadBody(strings.NewReader("12345"), 5, &buf); err != nil || n != 5 || buf.String() != "12345" {
		t.Errorf("at the cap: n=%d err=%v body=%q", n, err, buf.String())
	}
	if _, err := ReadBody(strings.NewReader("123456"), 5, &buf); !errors.Is(err, ErrBodyTooLarge) {
		t.Errorf("over the cap: err = %v", err)
	}
	endless := &counting{}
	if _, err := ReadBody(endless, 1000, &buf); !errors.Is(err, ErrBodyTooLarge) || endless.n > 1001+512 {
		t.Errorf("endless body: err = %v after %d bytes", err, endless.n)
	}
}

type counting struct{ n int }

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	c.n += len(p)
	return len(p), nil
}
