package discovery

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// hangingAPI answers pod lists and watches as kube-apiserver does (a
// bookmark on the open watch every bookmark), until hang: from then on
// it accepts every request and answers none, and the open watch carries
// nothing, as a kube-apiserver stopped by SIGSTOP behaves; resume makes
// it answer again.
type hangingAPI struct {
	bookmark time.Duration

	mu     sync.Mutex
	hung   bool
	resume chan struct{}
}

func (a *hangingAPI) hang() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.hung, a.resume = true, make(chan struct{})
}

func (a *hangingAPI) wake() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hung {
		a.hung = false
		close(a.resume)
	}
}

// wait blocks while the server is hung; false when the client gave up.
func (a *hangingAPI) wait(r *http.Request) bool {
	a.mu.Lock()
	hung, resume := a.hung, a.resume
	a.mu.Unlock()
	if !hung {
		return true
	}
	select {
	case <-resume:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (a *hangingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !a.wait(r) {
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path != "/api/v1/pods":
		http.NotFound(w, r)
	case q.Get("sendInitialEvents") == "true":
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400,"message":"sendInitialEvents is not supported"}`))
	case q.Get("watch") == "true":
		fl := w.(http.Flusher)
		w.WriteHeader(http.StatusOK)
		fl.Flush()
		tick := time.NewTicker(a.bookmark)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if !a.wait(r) {
					return
				}
				w.Write([]byte(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"7"}}}` + "\n"))
				fl.Flush()
			}
		}
	default:
		w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[` + podJSON("listed", "10.0.0.1") + `]}`))
	}
}

// listThenWatch says, as an API server without streaming lists does,
// that the informer must list and then watch.
type listThenWatch struct{ PodClient }

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// hangScale is the factor applied to the daemon's defaults in the hung
// API server test: 1/60 unless DISCOVERY_HANG_SCALE says otherwise (1
// runs it at the defaults, in about four minutes).
func hangScale(t *testing.T) float64 {
	if s := os.Getenv("DISCOVERY_HANG_SCALE"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			t.Fatalf("DISCOVERY_HANG_SCALE=%q", s)
		}
		return f
	}
	return 1.0 / 60
}

// An API server that goes silent after discovery has synced (accepts
// connections, answers nothing, sends nothing on the open watch) is
// noticed within the staleness rule: sync_ok 0, one warning, the status
// page failing; when it answers again discovery recovers by itself.
// Before the staleness rule sync_ok stayed 1 and nothing was logged.
func TestHungAPIServerIsNoticedAndRecovers(t *testing.T) {
	scale := hangScale(t)
	sc := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	api := &hangingAPI{bookmark: sc(time.Minute)} // kube-apiserver's bookmark frequency
	srv := httptest.NewServer(api)
	t.Cleanup(func() { // after discovery has stopped
		api.wake()
		srv.CloseClientConnections()
		srv.Close()
	})
	client, err := NewPodClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	// client-go logs into the same log, as the daemon has it.
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(logs, nil)))
	t.Cleanup(klog.ClearLogger)
	d, _ := runDiscovery(t, Options{
		Rules: Rules{Node: "node-a"}, Pods: listThenWatch{client}, Registerer: prometheus.NewRegistry(),
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		RequestTimeout: sc(DefaultRequestTimeout), StaleAfter: sc(DefaultStaleAfter),
	})
	syncOK := func() float64 { return testutil.ToFloat64(d.health.syncOK) }
	limit := sc(10 * time.Minute)
	eventually(t, "the first sync", limit, func() bool { return d.Health().Synced && syncOK() == 1 })
	warned := logs.count("level=WARN")
	// Healthy and quiet for longer than the staleness limit: the
	// bookmarks keep it in sync.
	time.Sleep(sc(3 * time.Minute))
	if syncOK() != 1 || logs.count("level=WARN") != warned {
		t.Fatalf("healthy API server with bookmarks only: sync_ok %v, log:\n%s", syncOK(), logs)
	}

	api.hang()
	hungAt := time.Now()
	eventually(t, "sync_ok 0 after the API server hung", limit, func() bool { return syncOK() == 0 })
	noticed := time.Since(hungAt)
	t.Logf("noticed a hung API server after %s (staleness limit %s, request timeout %s, bookmarks every %s; %.0f s at the defaults)",
		noticed.Round(time.Millisecond), sc(DefaultStaleAfter), sc(DefaultRequestTimeout), api.bookmark, noticed.Seconds()/scale)
	if max := sc(DefaultStaleAfter) + sc(15*time.Second) + sc(DefaultRequestTimeout); noticed > max {
		t.Errorf("noticed after %s, the rule promises at most %s", noticed, max)
	}
	failing, lines := d.Health().Summary()
	if !failing || !strings.Contains(strings.Join(lines, "\n"), "nothing from the API server for") {
		t.Errorf("status page not failing, or not saying why, while the API server is hung: %q", lines)
	}
	// Several request timeouts later, still one warning.
	time.Sleep(sc(3 * time.Minute))
	if n := logs.count("level=WARN") - warned; n != 1 {
		t.Errorf("%d warnings while hung, want 1:\n%s", n, logs)
	}
	// Nor does client-go add an error line for each retry.
	if n := logs.count("level=ERROR"); n != 0 {
		t.Errorf("%d error lines while hung, want none:\n%s", n, logs)
	}
	if n := testutil.ToFloat64(d.health.errs.WithLabelValues("timeout")); n < 1 {
		t.Errorf("watch_errors_total{reason=timeout} %v, want at least 1", n)
	}

	api.wake()
	eventually(t, "sync_ok 1 after the API server answers again", limit, func() bool { return syncOK() == 1 })
	if failing, lines := d.Health().Summary(); failing {
		t.Errorf("status page still failing after recovery: %q", lines)
	}
	if logs.count("answers again") != 1 {
		t.Errorf("want one note of the recovery:\n%s", logs)
	}
}

// An API server that accepts connections and never answers, from the
// start: the first list times out, which is counted and logged once, and
// discovery is not ready. Before the request timeout the list waited
// without limit and nothing was said.
func TestAPIServerThatNeverAnswers(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	defer func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	client, err := NewPodClient(&rest.Config{Host: "http://" + l.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	d, _ := runDiscovery(t, Options{
		Rules: Rules{Node: "node-a"}, Pods: client, Registerer: prometheus.NewRegistry(),
		Logger:         slog.New(slog.NewTextHandler(logs, nil)),
		RequestTimeout: 200 * time.Millisecond,
	})
	eventually(t, "a timed-out list", time.Minute, func() bool {
		return testutil.ToFloat64(d.health.errs.WithLabelValues("timeout")) >= 2
	})
	if n := logs.count("does not answer in time"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs)
	}
	if d.Ready() == nil {
		t.Error("ready without a list")
	}
	if failing, lines := d.Health().Summary(); !failing {
		t.Errorf("status page not failing: %q", lines)
	}
}
