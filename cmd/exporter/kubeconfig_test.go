package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeAPI answers the pod list and watch of one node as the Kubernetes API
// server does (no streaming lists, as a server without them), requires a
// bearer token, and can be switched off (every request refused with 503,
// as an API server behind a load balancer that lost its backends).
type fakeAPI struct {
	token string
	pods  string // a PodList

	mu   sync.Mutex
	down bool
	auth []string // Authorization headers seen
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.auth = append(a.auth, r.Header.Get("Authorization"))
	down := a.down
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	status := func(code int, reason, msg string) {
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d,"message":%q}`, reason, code, msg)
	}
	q := r.URL.Query()
	switch {
	case r.Header.Get("Authorization") != "Bearer "+a.token:
		status(http.StatusUnauthorized, "Unauthorized", "Unauthorized")
	case down:
		status(http.StatusServiceUnavailable, "ServiceUnavailable", "no endpoints available")
	case r.URL.Path == "/api/v1/nodes/node-a":
		w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"node-a"}}`))
	case r.URL.Path != "/api/v1/pods":
		status(http.StatusNotFound, "NotFound", "not found")
	case q.Get("sendInitialEvents") == "true":
		status(http.StatusBadRequest, "BadRequest", "sendInitialEvents is not supported")
	case q.Get("watch") == "true":
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	default:
		w.Write([]byte(a.pods))
	}
}

// serve --kubernetes.discovery --kubeconfig FILE runs outside a cluster:
// the kubeconfig's server and token are used, /-/ready waits for the first
// list, the status page shows discovery's state, and a pod of the node
// becomes a target. $KUBECONFIG works the same way.
func TestServeDiscoversWithAKubeconfig(t *testing.T) {
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 0\n"))
	}))
	defer engine.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(engine.URL, "http://"), ":")
	pod, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"name": "vllm-0", "namespace": "llm", "resourceVersion": "3",
			"annotations": map[string]string{"goodput-exporter.io/scrape": "true", "goodput-exporter.io/port": port}},
		"spec":   map[string]any{"nodeName": "node-a", "containers": []any{map[string]any{"name": "engine"}}},
		"status": map[string]any{"phase": "Running", "podIP": "127.0.0.1"},
	})
	api := &fakeAPI{token: "s3cret", down: true,
		pods: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"3"},"items":[` + string(pod) + `]}`}
	// TLS, as client-go sends a kubeconfig's credentials over TLS only.
	apiSrv := httptest.NewTLSServer(api)
	defer apiSrv.Close()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiSrv.Certificate().Raw}))

	for _, how := range []string{"flag", "env"} {
		t.Run(how, func(t *testing.T) {
			api.mu.Lock()
			api.down, api.auth = true, nil
			api.mu.Unlock()
			kc := filepath.Join(t.TempDir(), "kubeconfig")
			os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: `+apiSrv.URL+`, certificate-authority-data: `+ca+`}}]
users: [{name: u, user: {token: s3cret}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600)
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("HOME", t.TempDir())
			args := []string{"serve", "--gpu.backend=none", "--collect.interval=100ms", "--kubernetes.discovery", "--kubernetes.node-name=node-a"}
			if how == "flag" {
				t.Setenv("KUBECONFIG", "")
				args = append(args, "--kubeconfig="+kc)
			} else {
				t.Setenv("KUBECONFIG", kc)
			}
			web := freeAddr(t)
			args = append(args, "--web.listen-address="+web)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run(ctx, args, io.Discard, io.Discard) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			get := func(path string) (int, string) {
				resp, err := http.Get("http://" + web + path)
				if err != nil {
					return 0, ""
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			waitFor := func(what string, ok func() bool) {
				t.Helper()
				deadline := time.Now().Add(20 * time.Second)
				for !ok() {
					if time.Now().After(deadline) {
						_, m := get("/metrics")
						var ks []string
						for _, l := range strings.Split(m, "\n") {
							if strings.Contains(l, "kubernetes") && !strings.HasPrefix(l, "#") {
								ks = append(ks, l)
							}
						}
						t.Fatalf("timed out waiting for %s:\n%s", what, strings.Join(ks, "\n"))
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			// The API server is down: serving, not ready, and saying why.
			waitFor("a failed list", func() bool {
				_, m := get("/metrics")
				return strings.Contains(m, "goodput_exporter_kubernetes_sync_ok 0") &&
					!strings.Contains(m, `goodput_exporter_kubernetes_watch_errors_total{reason="other"} 0`)
			})
			if code, body := get("/-/ready"); code != http.StatusServiceUnavailable || !strings.Contains(body, "has not listed the pods of node node-a") {
				t.Errorf("/-/ready before the first list: %d %q", code, body)
			}
			if _, page := get("/"); !strings.Contains(page, "Kubernetes discovery, node node-a") || !strings.Contains(page, "not synced") {
				t.Errorf("the status page does not say discovery has not synced:\n%.2000s", page)
			}
			api.mu.Lock()
			api.down = false
			api.mu.Unlock()
			waitFor("the pod's target", func() bool {
				_, m := get("/metrics")
				return strings.Contains(m, `llm_up{`) && strings.Contains(m, `target="llm/vllm-0"`)
			})
			waitFor("ready", func() bool { code, _ := get("/-/ready"); return code == http.StatusOK })
			if _, page := get("/"); !strings.Contains(page, "1 pods on the node") || !strings.Contains(page, "synced; last answer") {
				t.Errorf("the status page does not show discovery synced:\n%.2000s", page)
			}
			api.mu.Lock()
			defer api.mu.Unlock()
			for _, a := range api.auth {
				if a != "Bearer s3cret" {
					t.Errorf("a request without the kubeconfig's token: %q", a)
				}
			}
		})
	}
}
