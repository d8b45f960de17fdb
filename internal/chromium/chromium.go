// Package chromium drives Debian's headless chromium from tests: a DOM
// dump of a page, and a page held open over the Chrome DevTools Protocol
// to run script in (click a button, read an element) and take a
// screenshot. CI installs chromium and sets GOODPUT_REQUIRE_CHROMIUM=1,
// so there a missing browser fails the test instead of skipping it.
package chromium

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"
)

// Path returns the browser's path, or skips (fails with
// GOODPUT_REQUIRE_CHROMIUM set) when it is not installed.
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("GOODPUT_REQUIRE_CHROMIUM") != "" {
		t.Fatal("chromium is required (GOODPUT_REQUIRE_CHROMIUM is set) but not installed: apt-get install --no-install-recommends chromium")
	}
	t.Skip("chromium not installed (apt-get install --no-install-recommends chromium); set GOODPUT_REQUIRE_CHROMIUM=1 to fail instead")
	return ""
}

// flags run the browser headless as root in a container.
func flags(dir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir=" + dir}
}

// DumpDOM loads url and returns the DOM once the page has loaded.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, Path(t), append(flags(t.TempDir()), "--dump-dom", url)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, errb.String())
	}
	return out.String()
}

// Page is a browser tab held open over the DevTools protocol.
type Page struct {
	t   testing.TB
	ws  *websocket.Conn
	cmd *exec.Cmd
	id  atomic.Int64
}

// Open starts a browser on url with a window of w×h CSS pixels; it is
// closed when the test ends.
func Open(t testing.TB, url string, w, h int) *Page {
	t.Helper()
	dir := t.TempDir()
	args := append(flags(dir), "--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1",
		fmt.Sprintf("--window-size=%d,%d", w, h), "--hide-scrollbars", url)
	cmd := exec.Command(Path(t), args...)
	var errb syncbuf.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Page{t: t, cmd: cmd}
	t.Cleanup(p.close)
	// The browser writes its port to DevToolsActivePort once it listens.
	var port string
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if first, _, ok := strings.Cut(string(b), "\n"); ok && first != "" {
				port = first
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium did not open its debugging port:\n%s", errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var targets []struct{ Type, URL, WebSocketDebuggerURL string }
	for {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
		}
		if err == nil && len(targets) > 0 && targets[0].WebSocketDebuggerURL != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium lists no page: %v\n%s", err, errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	var page string
	for _, tg := range targets {
		if tg.Type == "page" {
			page = tg.WebSocketDebuggerURL
			break
		}
	}
	if page == "" {
		t.Fatalf("chromium lists no page among %+v", targets)
	}
	ws, err := websocket.Dial(page, "", "http://127.0.0.1")
	if err != nil {
		t.Fatalf("DevTools websocket %s: %v", page, err)
	}
	p.ws = ws
	return p
}

func (p *Page) close() {
	if p.ws != nil {
		p.ws.Close()
	}
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
}

// call sends one DevTools command and returns its result.
func (p *Page) call(method string, params any) (json.RawMessage, error) {
	id := p.id.Add(1)
	p.ws.SetDeadline(time.Now().Add(30 * time.Second))
	if err := websocket.JSON.Send(p.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		var msg struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := websocket.JSON.Receive(p.ws, &msg); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if msg.ID != id {
			continue // an event
		}
		if msg.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, msg.Error.Message)
		}
		return msg.Result, nil
	}
}

// eval runs a JavaScript expression in the page and returns its value (a
// promise is awaited) as JSON; an exception is an error.
func (p *Page) eval(expr string) (json.RawMessage, error) {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	raw, err := p.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("Runtime.evaluate: %w", err)
	}
	if r.Exception != nil {
		return nil, fmt.Errorf("%s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	return r.Result.Value, nil
}

// Eval runs a JavaScript expression in the page and returns its value
// as JSON, failing the test on an exception.
func (p *Page) Eval(expr string) json.RawMessage {
	p.t.Helper()
	v, err := p.eval(expr)
	if err != nil {
		p.t.Fatal(err)
	}
	return v
}

// String evaluates an expression whose value is a string.
func (p *Page) String(expr string) string {
	p.t.Helper()
	var s string
	if raw := p.Eval(expr); len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &s); err != nil {
			p.t.Fatalf("%s: not a string: %s", expr, raw)
		}
	}
	return s
}

// WaitFor evaluates a boolean expression until it holds, failing the test
// after timeout.
func (p *Page) WaitFor(what, expr string, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		// An error is retried: the page may be between two documents.
		v, err := p.eval("Boolean(" + expr + ")")
		if err == nil && string(v) == "true" {
			return
		}
		if time.Now().After(deadline) {
			body, _ := p.eval("document.body ? document.body.innerText : ''")
			p.t.Fatalf("waited %v for %s (%s): %v; the page says:\n%s", timeout, what, expr, err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// DisableScripts turns the page's JavaScript off for what it loads next
// (Eval still runs).
func (p *Page) DisableScripts() {
	p.t.Helper()
	if _, err := p.call("Emulation.setScriptExecutionDisabled", map[string]any{"value": true}); err != nil {
		p.t.Fatal(err)
	}
}

// Navigate loads url in the page.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	if _, err := p.call("Page.navigate", map[string]any{"url": url}); err != nil {
		p.t.Fatal(err)
	}
}

// Screenshot returns a PNG of the whole page at its CSS width.
func (p *Page) Screenshot() []byte {
	p.t.Helper()
	raw, err := p.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true})
	if err != nil {
		p.t.Fatal(err)
	}
	var r struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		p.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		p.t.Fatal(err)
	}
	return png
}
