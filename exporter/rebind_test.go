package exporter

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// A DNS-rebinding page: evil.example re-resolved to the daemon's address,
// so that the browser sends Host and Origin (and Referer) both naming
// evil.example, with the daemon's port. The origin check alone passes it;
// the Host check refuses it on /-/reload and /-/lever, and still lets
// through the names the daemon is known by.
func TestReloadRefusesRebinding(t *testing.T) {
	var loads atomic.Int32
	load := func() (*config.Config, error) {
		loads.Add(1)
		cfg, _ := config.Parse(nil)
		return cfg, nil
	}
	fl := &fakeLevers{}
	ex := New(Options{Interval: time.Second, Timeout: time.Second, NoJitter: true, EnableLifecycle: true, Levers: fl,
		Hosts: []string{"exporter.monitoring.svc"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); ex.Wait() }()
	if err := ex.Start(ctx, load); err != nil {
		t.Fatal(err)
	}
	web := newWeb(t, ex.Handler("/metrics", load))
	_, port, _ := net.SplitHostPort(web.Listener.Addr().String())
	post := func(path, host string, header map[string]string) (int, string) {
		body := "x"
		if path == "/-/lever" {
			body = url.Values{"target": {"a"}, "lever": {"healthy"}}.Encode()
		}
		req, _ := http.NewRequest(http.MethodPost, web.URL+path, strings.NewReader(body))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 512)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return resp.StatusCode, b.String()
	}
	evil := "evil.example:" + port
	for _, path := range []string{"/-/reload", "/-/lever"} {
		for _, h := range []map[string]string{
			{"Origin": "http://" + evil},
			{"Origin": "http://" + evil, "Referer": "http://" + evil + "/"},
			{"Origin": "http://" + evil, "Sec-Fetch-Site": "same-origin"},
			nil, // a page's fetch with no Origin is not a browser's, but the name alone is enough
		} {
			if code, body := post(path, evil, h); code != http.StatusForbidden || !strings.Contains(body, "evil.example") {
				t.Errorf("POST %s, Host %s, %v: %d %q, want 403 naming the Host", path, evil, h, code, body)
			}
		}
		if code, _ := post(path, "EVIL.example.:"+port, nil); code != http.StatusForbidden {
			t.Errorf("POST %s with an upper-case, rooted rebinding name: %d, want 403", path, code)
		}
	}
	if n, set := loads.Load(), len(fl.set); n != 1 || set != 0 { // Start loads once
		t.Fatalf("rebinding requests acted: %d loads (want 1, Start's), %d levers switched", n, set)
	}
	// The names the daemon is reached by, with their own origin.
	for _, host := range []string{"127.0.0.1:" + port, "[::1]:" + port, "localhost:" + port, "LocalHost", "app.localhost:" + port, "exporter.monitoring.svc:" + port} {
		if code, body := post("/-/reload", host, map[string]string{"Origin": "http://" + host}); code != http.StatusOK {
			t.Errorf("POST /-/reload, Host %s: %d %q, want 200", host, code, body)
		}
	}
	if code, body := post("/-/lever", "localhost:"+port, nil); code != http.StatusSeeOther {
		t.Errorf("POST /-/lever, Host localhost: %d %q, want 303", code, body)
	}
}

// The Host check by itself: what is an address of the daemon.
func TestForeignHost(t *testing.T) {
	hosts := []string{"node-1", "exporter.monitoring.svc."}
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:9835", true}, {"10.0.0.7", true}, {"[fe80::1]:9835", true}, {"", true},
		{"localhost:9835", true}, {"a.localhost", true}, {"node-1:9835", true}, {"NODE-1", true},
		{"exporter.monitoring.svc:9835", true}, {"exporter.monitoring.svc.", true},
		{"evil.example:9835", false}, {"node-1.evil.example", false}, {"localhost.evil.example", false}, {"127.0.0.1.nip.io", false},
	} {
		r := &http.Request{Host: c.host}
		if got := foreignHost(r, hosts) == ""; got != c.ok {
			t.Errorf("Host %q accepted %v, want %v", c.host, got, c.ok)
		}
	}
}
