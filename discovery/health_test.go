package discovery

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"

	"github.com/goodput-exporter/goodput-exporter/internal/syncbuf"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// logBuffer is a slog destination the test can read while discovery
// writes to it.
type logBuffer struct{ syncbuf.Buffer }

// count is how many times s was logged.
func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

// runDiscovery runs a discoverer until the test ends.
func runDiscovery(t *testing.T, opts Options) (*Discoverer, *recordingSink) {
	t.Helper()
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sink := &recordingSink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return d, sink
}

func eventually(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With the API server unreachable discovery says so once at warning
// level, counts every failed request, is not ready, and the status says
// why; once the API server answers, discovery syncs, is ready and says so.
func TestUnreachableAPIServerIsReportedThenRecovers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: connection refused

	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	client, err := NewPodClient(&rest.Config{Host: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	d, sink := runDiscovery(t, Options{Rules: Rules{Node: "node-a"}, Pods: client, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})

	unreachable := d.health.errs.WithLabelValues("unreachable")
	// The reflector retries with a growing, jittered backoff: on a
	// loaded 2-core machine (the whole suite from a cold build cache)
	// its second try came after 20 s.
	eventually(t, "two failed requests", time.Minute, func() bool { return testutil.ToFloat64(unreachable) >= 2 })
	if n := logs.count("cannot reach the Kubernetes API server"); n != 1 {
		t.Errorf("%d warnings for one outage, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("the outage is not logged at warning level:\n%s", logs)
	}
	if err := d.Ready(); err == nil {
		t.Error("ready before the first list")
	}
	h := d.Health()
	if h.Synced || h.OK || !strings.Contains(h.LastError, "connection refused") {
		t.Errorf("health %+v, want not synced, not ok, the refusal as last error", h)
	}
	if v := testutil.ToFloat64(d.health.syncOK); v != 0 {
		t.Errorf("sync_ok = %v, want 0", v)
	}
	if v := testutil.ToFloat64(d.health.lastSync); v != 0 {
		t.Errorf("last sync = %v before any answer, want 0", v)
	}

	// The API server comes up on the same address.
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s again: %v", addr, err)
	}
	api := &apiServer{list: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[` + podJSON("listed", "10.0.0.1") + `]}`}
	srv := &http.Server{Handler: api}
	go srv.Serve(l2)
	t.Cleanup(func() { srv.Close() })

	before := time.Now()
	eventually(t, "discovery to sync", 40*time.Second, func() bool { return d.Ready() == nil && len(sink.last()) == 1 })
	eventually(t, "sync_ok", 5*time.Second, func() bool { return testutil.ToFloat64(d.health.syncOK) == 1 })
	if ts := testutil.ToFloat64(d.health.lastSync); ts < float64(before.Unix()) {
		t.Errorf("last sync %v, want at or after %v", ts, before.Unix())
	}
	if n := logs.count("answers again"); n != 1 {
		t.Errorf("%d recovery lines, want 1:\n%s", n, logs)
	}
	if h := d.Health(); !h.Synced || !h.OK || h.LastError != "" || h.Pods != 1 {
		t.Errorf("health %+v after recovery", h)
	}
}

// forbiddenAPI refuses every request as an API server refuses a
// ServiceAccount without RBAC on pods.
type forbiddenAPI struct{}

func (forbiddenAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,` +
		`"message":"pods is forbidden: User \"system:serviceaccount:monitoring:goodput-exporter\" cannot list resource \"pods\" in API group \"\" at the cluster scope"}`))
}

func TestForbiddenIsNamedOnce(t *testing.T) {
	srv := newLoopbackServer(t, forbiddenAPI{})
	logs := &logBuffer{}
	client, err := NewPodClient(&rest.Config{Host: srv})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := runDiscovery(t, Options{Rules: Rules{Node: "node-a"}, Pods: client,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	forbidden := d.health.errs.WithLabelValues("forbidden")
	eventually(t, "two refusals", 20*time.Second, func() bool { return testutil.ToFloat64(forbidden) >= 2 })
	if n := logs.count("needs get, list and watch on pods"); n != 1 {
		t.Errorf("%d warnings naming the missing permission, want 1:\n%s", n, logs)
	}
	if v := testutil.ToFloat64(d.health.errs.WithLabelValues("unreachable")); v != 0 {
		t.Errorf("a refusal counted as unreachable %v times", v)
	}
	if d.Ready() == nil {
		t.Error("ready although no list ever succeeded")
	}
}

// A node with no pods at all, not even the daemon's own, is a wrong node
// name: discovery warns once, and the pods gauge reads 0.
func TestEmptyNodeWarnsOnce(t *testing.T) {
	api := &apiServer{list: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`}
	srv := newLoopbackServer(t, api)
	logs := &logBuffer{}
	client, err := NewPodClient(&rest.Config{Host: srv})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := runDiscovery(t, Options{Rules: Rules{Node: "node-typo"}, Pods: client, EmptyNodeWarning: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	const warning = "no pods at all on this node"
	eventually(t, "the empty-node warning", 10*time.Second, func() bool { return logs.count(warning) > 0 })
	time.Sleep(300 * time.Millisecond) // several more checks
	if n := logs.count(warning); n != 1 {
		t.Errorf("%d empty-node warnings, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), "node=node-typo") {
		t.Errorf("the warning does not name the node:\n%s", logs)
	}
	if d.Ready() != nil {
		t.Error("an empty node that was listed is not ready")
	}
	if v := testutil.ToFloat64(d.health.pods); v != 0 {
		t.Errorf("node pods %v, want 0", v)
	}
}

// A node with pods, none annotated, never warns.
func TestNodeWithPodsDoesNotWarn(t *testing.T) {
	unannotated := strings.Replace(podJSON("plain", "10.0.0.3"), `"goodput-exporter.io/scrape":"true"`, `"x":"y"`, 1)
	api := &apiServer{list: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[` + unannotated + `]}`}
	srv := newLoopbackServer(t, api)
	logs := &logBuffer{}
	client, _ := NewPodClient(&rest.Config{Host: srv})
	d, _ := runDiscovery(t, Options{Rules: Rules{Node: "node-a"}, Pods: client, EmptyNodeWarning: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	eventually(t, "sync", 10*time.Second, func() bool { return d.Ready() == nil })
	time.Sleep(300 * time.Millisecond)
	if n := logs.count("no pods at all"); n != 0 {
		t.Errorf("warned about an empty node that has a pod:\n%s", logs)
	}
	if v := testutil.ToFloat64(d.health.pods); v != 1 {
		t.Errorf("node pods %v, want 1", v)
	}
}

type nodeGetter struct{ err error }

func (n nodeGetter) GetNode(context.Context, string) error { return n.err }

func TestNodeCheck(t *testing.T) {
	gr := schema.GroupResource{Resource: "nodes"}
	for _, c := range []struct {
		name string
		err  error
		want string // in the log; "" for nothing at info level or above
		lvl  string
	}{
		{"exists", nil, "", ""},
		{"missing", apierrors.NewNotFound(gr, "node-typo"), "does not exist", "level=WARN"},
		{"no permission", apierrors.NewForbidden(gr, "node-typo", nil), "needs get on nodes", "level=INFO"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &logBuffer{}
			checkNode(context.Background(), nodeGetter{c.err}, "node-typo", slog.New(slog.NewTextHandler(logs, nil)))
			out := logs.String()
			if c.want == "" {
				if out != "" {
					t.Errorf("logged %q for an existing node", out)
				}
				return
			}
			if !strings.Contains(out, c.want) || !strings.Contains(out, c.lvl) || !strings.Contains(out, "node-typo") {
				t.Errorf("log %q, want %q at %s naming the node", out, c.want, c.lvl)
			}
		})
	}
}

// The pod client's node lookup over HTTP: a missing node is NotFound.
func TestGetNodeOverHTTP(t *testing.T) {
	var path string
	srv := newLoopbackServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path = r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"nodes \"node-typo\" not found"}`))
	}))
	client, _ := NewPodClient(&rest.Config{Host: srv})
	err := client.(NodeGetter).GetNode(context.Background(), "node-typo")
	if !apierrors.IsNotFound(err) {
		t.Errorf("GetNode = %v, want NotFound", err)
	}
	if path != "/api/v1/nodes/node-typo" {
		t.Errorf("asked %s", path)
	}
}

func TestErrorReason(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for want, err := range map[string]error{
		"forbidden":    apierrors.NewForbidden(gr, "", nil),
		"unauthorized": apierrors.NewUnauthorized("token expired"),
		"expired":      apierrors.NewResourceExpired("too old resource version"),
		"throttled":    apierrors.NewTooManyRequests("slow down", 1),
		"timeout":      apierrors.NewTimeoutError("slow", 1),
		"unreachable":  &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused"}},
		"other":        apierrors.NewBadRequest("nonsense"),
	} {
		if got := errorReason(err); got != want {
			t.Errorf("errorReason(%v) = %q, want %q", err, got, want)
		}
	}
	if got := errorReason(nil); got != "" {
		t.Errorf("errorReason(nil) = %q", got)
	}
}

func newLoopbackServer(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String()
}

// A watch that ends with its history expired leaves discovery out of
// sync until it has listed again (after an API server restart the
// reflector may wait out tens of seconds of backoff first): sync_ok reads
// 0 meanwhile, and 1 again on the next answer; neither change is logged,
// since compaction is routine. A failure while out of sync is still one.
func TestExpiredWatchIsOutOfSyncUntilTheNextList(t *testing.T) {
	var log logBuffer
	h := newHealth("node-a", slog.New(slog.NewTextHandler(&log, nil)), time.Now, time.Minute)
	expired := apierrors.NewResourceExpired("too old resource version: 237 (239)")
	h.answered()
	if v := testutil.ToFloat64(h.syncOK); v != 1 {
		t.Fatalf("sync_ok %v after an answer", v)
	}
	h.streamFailed(expired)
	if v := testutil.ToFloat64(h.syncOK); v != 0 {
		t.Errorf("sync_ok %v while the watch's history expired and nothing was listed since", v)
	}
	if v := testutil.ToFloat64(h.errs.WithLabelValues("expired")); v != 1 {
		t.Errorf("expired counted %v times, want 1", v)
	}
	h.answered()
	if v := testutil.ToFloat64(h.syncOK); v != 1 {
		t.Errorf("sync_ok %v after listing again", v)
	}
	if log.String() != "" {
		t.Errorf("a routine expiry was logged:\n%s", log.String())
	}
	// Unreachable first, then expired on the way back: still the warning
	// once, and the recovery said once.
	h.result(&net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connection refused"}})
	h.streamFailed(expired)
	if v := testutil.ToFloat64(h.syncOK); v != 0 {
		t.Errorf("sync_ok %v while unreachable", v)
	}
	h.answered()
	if n := log.count("cannot reach the Kubernetes API server"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, log.String())
	}
	if n := log.count("answers again"); n != 1 {
		t.Errorf("%d recoveries logged, want 1:\n%s", n, log.String())
	}
}

// The status page's lines for discovery, by hand for each state.
func TestHealthSummary(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		h       Health
		failing bool
		lines   []string
	}{
		{"listing", Health{}, true, []string{"not synced yet: listing this node's pods"}},
		{"refused", Health{LastError: "forbidden"}, true, []string{"not synced: forbidden"}},
		{"synced", Health{Synced: true, OK: true, LastSync: at, Pods: 3}, false,
			[]string{"synced; last answer from the API server at 10:30:00 UTC", "3 pods on the node"}},
		{"outage", Health{Synced: true, LastSync: at, LastError: "connection refused", Pods: 3}, true,
			[]string{"API server not answering since the last answer at 10:30:00 (targets found so far are kept): connection refused", "3 pods on the node"}},
		{"no pods", Health{Synced: true, OK: true, LastSync: at}, true,
			[]string{"synced; last answer from the API server at 10:30:00 UTC", "0 pods on the node, not even this daemon's: check --kubernetes.node-name"}},
		{"invalid", Health{Synced: true, OK: true, LastSync: at, Pods: 2, InvalidTotal: 3,
			Invalid: []InvalidPod{{Namespace: "llm", Pod: "p", Reason: "port", Detail: "port \"x\" is not a number"}}}, false,
			[]string{"synced; last answer from the API server at 10:30:00 UTC", "2 pods on the node",
				"cannot scrape pod llm/p (port): port \"x\" is not a number", "and 2 more pods that cannot be scraped (see the log)"}},
	} {
		failing, lines := c.h.Summary()
		if failing != c.failing || strings.Join(lines, "\n") != strings.Join(c.lines, "\n") {
			t.Errorf("%s: failing %v, lines\n%s\nwant %v\n%s", c.name, failing, strings.Join(lines, "\n"), c.failing, strings.Join(c.lines, "\n"))
		}
	}
}
