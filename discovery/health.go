package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// MaxInvalidListed is how many invalid pods are named, on the status page
// and in goodput_exporter_kubernetes_invalid_pod_info; the gauge
// goodput_exporter_kubernetes_invalid_pods counts them all.
const MaxInvalidListed = 20

// DefaultEmptyNodeWarning is how long the node may have no pods at all,
// not even the daemon's own, before discovery warns that its node name is
// probably wrong.
const DefaultEmptyNodeWarning = time.Minute

// InvalidPod names a pod annotated for scraping that cannot be scraped.
type InvalidPod struct {
	Namespace, Pod string
	// Reason is a fixed word (scrape, scheme, path, engine, model, port,
	// other); Detail the whole error, with the annotation's value.
	Reason, Detail string
}

// Health is discovery's view of itself.
type Health struct {
	Node string
	// Synced: the node's pods have been listed at least once.
	Synced bool
	// OK: the API server answered the last list or watch request.
	OK bool
	// LastSync is when the API server last answered (a list, a watch
	// opened, or an event); zero before the first answer.
	LastSync time.Time
	// LastError is the last failed request's error while !OK.
	LastError string
	// Pods is the number of pods on the node, annotated or not.
	Pods int
	// Invalid are the first MaxInvalidListed invalid pods by namespace and
	// name; InvalidTotal counts them all.
	Invalid      []InvalidPod
	InvalidTotal int
}

// health keeps Health and the series that publish it.
type health struct {
	logger *slog.Logger
	now    func() time.Time
	empty  time.Duration

	mu          sync.Mutex
	h           Health
	state       string // "" (no answer yet), "ok", or the reason of the last failure
	recorded    error  // the last failure seen by result, which the reflector may hand on
	emptySince  time.Time
	emptyWarned bool

	syncOK   prometheus.Gauge
	lastSync prometheus.Gauge
	errs     *prometheus.CounterVec
	pods     prometheus.Gauge
	info     *prometheus.GaugeVec
}

func newHealth(node string, logger *slog.Logger, now func() time.Time, empty time.Duration) *health {
	h := &health{
		logger: logger, now: now, empty: empty, h: Health{Node: node},
		syncOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_sync_ok",
			Help: "1 when the Kubernetes API server answered discovery's last list or watch request, 0 when it failed (unreachable, forbidden, ...: see goodput_exporter_kubernetes_watch_errors_total) or when a watch ended with its history expired until discovery has listed again.",
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_last_sync_timestamp_seconds",
			Help: "When the Kubernetes API server last answered discovery (a list, a watch opened or a pod event), Unix seconds; 0 before the first answer.",
		}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "goodput_exporter_kubernetes_watch_errors_total",
			Help: "Failed list or watch requests of discovery by reason: unreachable, forbidden, unauthorized, timeout, throttled, expired (routine: the watch's history was compacted; discovery lists again), other.",
		}, []string{"reason"}),
		pods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_node_pods",
			Help: "Pods on this node, annotated or not. 0 for long usually means a wrong --kubernetes.node-name: the daemon's own pod runs there.",
		}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_invalid_pod_info",
			Help: "1 for each pod annotated for scraping whose annotations cannot be used, with the reason (scrape, scheme, path, engine, model, proxy, port); at most 20 pods are named, goodput_exporter_kubernetes_invalid_pods counts them all.",
		}, []string{"namespace", "pod", "reason"}),
	}
	for _, r := range []string{"unreachable", "forbidden", "unauthorized", "timeout", "throttled", "expired", "other"} {
		h.errs.WithLabelValues(r) // every reason from the start, at 0
	}
	return h
}

func (h *health) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{h.syncOK, h.lastSync, h.errs, h.pods, h.info} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// answered records an answer of the API server.
func (h *health) answered() {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.now()
	h.h.OK, h.h.LastSync, h.h.LastError = true, t, ""
	h.syncOK.Set(1)
	h.lastSync.Set(float64(t.UnixNano()) / 1e9)
	if h.state != "ok" && h.state != "" && h.state != "expired" {
		h.logger.Info("kubernetes API server answers again", "node", h.h.Node, "was", h.state)
	}
	h.state = "ok"
}

// result records the outcome of a list or watch request.
func (h *health) result(err error) {
	if err == nil {
		h.answered()
		return
	}
	h.mu.Lock()
	h.recorded = err
	h.mu.Unlock()
	h.failed(err)
}

// streamFailed records an error the reflector reports: an open watch
// that ended badly, or a failed request that result has already counted.
func (h *health) streamFailed(err error) {
	h.mu.Lock()
	seen := h.recorded != nil && errors.Is(err, h.recorded)
	h.mu.Unlock()
	if !seen {
		h.failed(err)
	}
}

// failed records a failed list or watch request. A watch whose history
// was compacted ("expired") is routine and logged nowhere, but discovery
// is out of sync until it has listed again, which after an API server
// outage can wait out the reflector's backoff (tens of seconds): so it
// sets sync_ok to 0 until the next answer.
func (h *health) failed(err error) {
	reason := errorReason(err)
	if reason == "" {
		return
	}
	h.errs.WithLabelValues(reason).Inc()
	h.mu.Lock()
	defer h.mu.Unlock()
	if reason == "expired" {
		if h.state == "ok" {
			h.h.OK, h.h.LastError = false, err.Error()
			h.syncOK.Set(0)
			h.state = reason
		}
		return
	}
	h.h.OK, h.h.LastError = false, err.Error()
	h.syncOK.Set(0)
	if h.state == reason {
		return // logged when the state changed
	}
	h.state = reason
	hint := map[string]string{
		"unreachable":  "cannot reach the Kubernetes API server; targets found so far are kept and still scraped",
		"forbidden":    "the Kubernetes API server refuses to list pods: the daemon's ServiceAccount needs get, list and watch on pods",
		"unauthorized": "the Kubernetes API server refuses the daemon's credentials (token expired or wrong kubeconfig?)",
		"timeout":      "the Kubernetes API server does not answer in time",
		"throttled":    "the Kubernetes API server throttles discovery's requests",
	}[reason]
	if hint == "" {
		hint = "kubernetes discovery's request failed"
	}
	h.logger.Warn(hint, "node", h.h.Node, "reason", reason, "err", err)
}

// synced records the informer's first complete list.
func (h *health) synced() {
	h.mu.Lock()
	h.h.Synced = true
	h.mu.Unlock()
}

// observe records the node's pods and the invalid ones after an update.
func (h *health) observe(pods int, invalid map[string]error) {
	list := make([]InvalidPod, 0, len(invalid))
	for key, err := range invalid {
		ns, name, _ := strings.Cut(key, "/")
		list = append(list, InvalidPod{Namespace: ns, Pod: name, Reason: invalidReason(err), Detail: err.Error()})
	}
	slices.SortFunc(list, func(a, b InvalidPod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod, b.Pod)
	})
	total := len(list)
	if len(list) > MaxInvalidListed {
		list = list[:MaxInvalidListed]
	}
	h.info.Reset()
	for _, p := range list {
		h.info.WithLabelValues(p.Namespace, p.Pod, p.Reason).Set(1)
	}
	h.pods.Set(float64(pods))
	h.mu.Lock()
	h.h.Pods, h.h.Invalid, h.h.InvalidTotal = pods, list, total
	h.mu.Unlock()
	h.checkEmpty()
}

// checkEmpty warns once when the node has had no pods at all for the
// warning's duration after the first sync; pods arriving re-arm it.
func (h *health) checkEmpty() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.h.Synced || h.h.Pods > 0 {
		h.emptySince, h.emptyWarned = time.Time{}, false
		return
	}
	now := h.now()
	if h.emptySince.IsZero() {
		h.emptySince = now
	}
	if !h.emptyWarned && now.Sub(h.emptySince) >= h.empty {
		h.emptyWarned = true
		h.logger.Warn("no pods at all on this node, not even the daemon's own: check --kubernetes.node-name (the downward API's spec.nodeName)",
			"node", h.h.Node, "for", now.Sub(h.emptySince).Round(time.Second))
	}
}

func (h *health) get() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.h
	out.Invalid = slices.Clone(h.h.Invalid)
	return out
}

// errorReason sorts a list or watch error into a reason word; "" for a
// watch that ended without one.
func errorReason(err error) string {
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, context.Canceled):
		return ""
	case apierrors.IsResourceExpired(err), apierrors.IsGone(err):
		return "expired"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsTooManyRequests(err):
		return "throttled"
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "unreachable"
	}
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	if strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "no such host") {
		return "unreachable"
	}
	return "other"
}

// NodeGetter reads one Node object; discovery uses it once, to warn when
// the configured node does not exist. It needs get on nodes, which the
// chart grants only with rbac.nodeCheck; without it the check is skipped.
type NodeGetter interface {
	GetNode(ctx context.Context, name string) error
}

// checkNode looks the node up once and says what it found.
func checkNode(ctx context.Context, g NodeGetter, node string, logger *slog.Logger) {
	err := g.GetNode(ctx, node)
	switch {
	case err == nil:
		logger.Debug("kubernetes node exists", "node", node)
	case apierrors.IsNotFound(err):
		logger.Warn("the node named by --kubernetes.node-name does not exist: discovery will find no pods", "node", node)
	case apierrors.IsForbidden(err):
		logger.Info("cannot check that the node exists (needs get on nodes; optional, the chart's rbac.nodeCheck)", "node", node)
	default:
		logger.Debug("checking the node failed", "node", node, "err", err)
	}
}

// Summary is discovery's state in lines for the status page, and whether
// it is failing (not synced, the API server not answering, no pods at
// all on the node).
func (h Health) Summary() (failing bool, lines []string) {
	switch {
	case !h.Synced && h.LastError != "":
		failing = true
		lines = append(lines, "not synced: "+h.LastError)
	case !h.Synced:
		failing = true
		lines = append(lines, "not synced yet: listing this node's pods")
	case !h.OK:
		failing = true
		lines = append(lines, fmt.Sprintf("API server not answering since the last answer at %s (targets found so far are kept): %s", h.LastSync.UTC().Format(time.TimeOnly), h.LastError))
	default:
		lines = append(lines, fmt.Sprintf("synced; last answer from the API server at %s UTC", h.LastSync.UTC().Format(time.TimeOnly)))
	}
	if h.Synced {
		line := fmt.Sprintf("%d pods on the node", h.Pods)
		if h.Pods == 0 {
			failing = true
			line += ", not even this daemon's: check --kubernetes.node-name"
		}
		lines = append(lines, line)
	}
	for _, p := range h.Invalid {
		lines = append(lines, fmt.Sprintf("cannot scrape pod %s/%s (%s): %s", p.Namespace, p.Pod, p.Reason, p.Detail))
	}
	if more := h.InvalidTotal - len(h.Invalid); more > 0 {
		lines = append(lines, fmt.Sprintf("and %d more pods that cannot be scraped (see the log)", more))
	}
	return failing, lines
}
