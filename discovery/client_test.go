package discovery

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// apiServer answers pod lists and watches as the Kubernetes API does, in
// JSON, and records every request's query. It refuses streaming lists
// (sendInitialEvents), as an API server without them does, so the
// informer lists and then watches.
type apiServer struct {
	mu      sync.Mutex
	queries []string
	list    string // a PodList
	events  []string
}

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.queries = append(a.queries, r.URL.Path+"?"+r.URL.RawQuery)
	a.mu.Unlock()
	if r.URL.Path != "/api/v1/pods" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case q.Get("sendInitialEvents") == "true":
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`))
	case q.Get("watch") == "true":
		fl := w.(http.Flusher)
		for _, e := range a.events {
			w.Write([]byte(e + "\n"))
			fl.Flush()
		}
		<-r.Context().Done() // the watch stays open until the informer stops
	default:
		w.Write([]byte(a.list))
	}
}

type recordingSink struct {
	mu   sync.Mutex
	sets [][]config.Target
}

func (s *recordingSink) SetDiscovered(ts []config.Target) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets = append(s.sets, ts)
	return nil
}

func (s *recordingSink) last() []config.Target {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sets) == 0 {
		return nil
	}
	return s.sets[len(s.sets)-1]
}

func podJSON(name, ip string) string {
	b, _ := json.Marshal(map[string]any{
		"kind": "Pod", "apiVersion": "v1", // as the API server writes objects in watch events
		"metadata": map[string]any{"name": name, "namespace": "llm", "resourceVersion": "7",
			"annotations": map[string]string{AnnotationScrape: "true", AnnotationPort: "8000"}},
		"spec":   map[string]any{"nodeName": "node-a", "containers": []any{map[string]any{"name": "engine"}}},
		"status": map[string]any{"phase": "Running", "podIP": ip},
	})
	return string(b)
}

// The daemon's own pod client, against an API server over HTTP: it asks
// for node-a's pods only, in a list and then a watch, and a pod that the
// watch adds becomes a target.
func TestPodClientOverHTTP(t *testing.T) {
	api := &apiServer{
		list:   `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[` + podJSON("listed", "10.0.0.1") + `]}`,
		events: []string{`{"type":"ADDED","object":` + podJSON("watched", "10.0.0.2") + `}`},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	client, err := NewPodClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Options{Rules: Rules{Node: "node-a"}, Pods: client})
	if err != nil {
		t.Fatal(err)
	}
	sink := &recordingSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, sink) }()
	defer func() {
		cancel()
		<-done
		srv.CloseClientConnections()
	}()

	want := map[string]string{"llm/listed": "http://10.0.0.1:8000/metrics", "llm/watched": "http://10.0.0.2:8000/metrics"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]string{}
		for _, tg := range sink.last() {
			got[tg.Name] = tg.URL
		}
		if len(got) == len(want) && got["llm/listed"] == want["llm/listed"] && got["llm/watched"] == want["llm/watched"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("targets %v, want %v; requests %q", got, want, api.queries)
		}
		time.Sleep(20 * time.Millisecond)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	var list, watch bool
	for _, q := range api.queries {
		u, _ := http.NewRequest("GET", "http://x"+q, nil)
		if fs := u.URL.Query().Get("fieldSelector"); fs != "spec.nodeName=node-a" {
			t.Errorf("request %s has field selector %q, want spec.nodeName=node-a", q, fs)
		}
		switch {
		case u.URL.Query().Get("sendInitialEvents") == "true":
		case u.URL.Query().Get("watch") == "true":
			watch = true
		default:
			list = true
		}
	}
	if !list || !watch {
		t.Errorf("requests %q: want a list and a watch", api.queries)
	}
}
