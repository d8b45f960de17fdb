// Package discovery finds the inference engines running on this node in
// Kubernetes: a pod informer restricted by the field selector
// spec.nodeName=<node> (no cluster-wide watch from every node's daemon),
// annotations that say which pods are engines and where their metrics
// are (Rules), and a loop that hands the resulting targets to the
// exporter every time the node's pods change.
package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// Sink receives the complete set of discovered targets each time it
// changes (exporter.Exporter is one).
type Sink interface {
	SetDiscovered([]config.Target) error
}

// Options configure a Discoverer.
type Options struct {
	Rules
	// Pods lists and watches the pods of every namespace (NewPodClient,
	// or client-go's typed pod client). A fake one must also have the fake
	// clientset's IsWatchListSemanticsUnSupported method.
	Pods PodClient
	// Resync re-lists the informer's cache to its handlers; 0: never (the
	// watch keeps it current).
	Resync time.Duration
	Logger *slog.Logger
	// Registerer receives the discovery's own series; nil registers none.
	Registerer prometheus.Registerer
	// Nodes, when set, is asked once whether the node exists (a wrong
	// --kubernetes.node-name otherwise yields no pods without a word).
	Nodes NodeGetter
	// EmptyNodeWarning is how long the node may have no pods at all before
	// a warning; 0: DefaultEmptyNodeWarning.
	EmptyNodeWarning time.Duration
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// RequestTimeout bounds every list, and every watch until the API
	// server has answered it; 0: DefaultRequestTimeout. A hung API server
	// accepts connections and answers nothing: without it the request
	// waits for as long as the server is hung.
	RequestTimeout time.Duration
	// StaleAfter is the staleness rule: no pod event, watch bookmark or
	// answered list or watch within it sets sync_ok to 0 with one warning;
	// 0: DefaultStaleAfter. A watch silent for 3/4 of it is opened again,
	// so that an API server that sends no bookmarks proves it is alive.
	StaleAfter time.Duration
}

// DefaultRequestTimeout bounds each list and the opening of each watch.
const DefaultRequestTimeout = 30 * time.Second

// DefaultStaleAfter is how long discovery may hear nothing from the API
// server (no event, bookmark, or answered list or watch) before it counts
// it as not answering. kube-apiserver sends a bookmark on a watch that
// asks for them (client-go's reflector does) about once a minute, so a
// healthy but quiet node is heard from at least twice as often.
const DefaultStaleAfter = 2 * time.Minute

// Discoverer watches the node's pods and feeds their targets to a Sink.
type Discoverer struct {
	opts     Options
	informer cache.SharedIndexInformer
	kick     chan struct{}

	targets prometheus.Gauge
	invalid prometheus.Gauge
	health  *health

	last        []config.Target
	invalidPods map[string]string // pod -> why it cannot be scraped, as last logged
}

// New builds a discoverer; Run starts it.
func New(opts Options) (*Discoverer, error) {
	if opts.Node == "" {
		return nil, errors.New("kubernetes discovery needs the node name (--kubernetes.node-name, or $NODE_NAME from the downward API)")
	}
	if opts.Pods == nil {
		return nil, errors.New("kubernetes discovery needs a client")
	}
	if err := CheckPodLabels(opts.PodLabels); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.EmptyNodeWarning <= 0 {
		opts.EmptyNodeWarning = DefaultEmptyNodeWarning
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = DefaultStaleAfter
	}
	d := &Discoverer{
		opts: opts,
		kick: make(chan struct{}, 1),
		targets: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_discovered_targets",
			Help: "Targets found among this node's pods by their annotations.",
		}),
		invalid: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "goodput_exporter_kubernetes_invalid_pods",
			Help: "Pods on this node annotated for scraping whose annotations cannot be used (bad port, scheme, path or engine); each is logged.",
		}),
		invalidPods: map[string]string{},
		health:      newHealth(opts.Node, opts.Logger, opts.Now, opts.EmptyNodeWarning),
	}
	if opts.Registerer != nil {
		if err := d.health.register(opts.Registerer); err != nil {
			return nil, err
		}
		if err := opts.Registerer.Register(d.targets); err != nil {
			return nil, err
		}
		if err := opts.Registerer.Register(d.invalid); err != nil {
			return nil, err
		}
	}
	selector := fields.OneTermEqualSelector("spec.nodeName", opts.Node).String()
	pods := opts.Pods
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			ctx, cancel := context.WithTimeout(ctx, opts.RequestTimeout)
			defer cancel()
			l, err := pods.List(ctx, o)
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("list of pods not answered within %s: %w (%w)", opts.RequestTimeout, context.DeadlineExceeded, err)
			}
			d.health.result(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			w, err := openWatch(ctx, pods, o, opts.RequestTimeout, opts.StaleAfter*3/4, d.health.answered)
			d.health.result(err)
			return w, err
		},
	}, opts.Pods) // a fake client says it cannot stream lists
	d.informer = cache.NewSharedIndexInformerWithOptions(lw, &corev1.Pod{}, cache.SharedIndexInformerOptions{ResyncPeriod: opts.Resync})
	// Keep only what Rules read: the cache then holds a few hundred bytes
	// per pod instead of its whole spec and status.
	if err := d.informer.SetTransform(slim); err != nil {
		return nil, err
	}
	// Every failed list or watch is counted and, on a change of state,
	// logged at warning level: client-go retries a refused connection
	// without a word above debug level, so the list and watch calls above
	// see each failure; the handler adds those that end an open watch.
	// client-go's own handler would log each of them again, at error
	// level ("Failed to watch", every retry of an outage): one warning per
	// outage is discovery's, the rest goes to debug.
	if err := d.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		d.health.streamFailed(err)
		d.opts.Logger.Debug("list or watch of pods failed", "node", d.opts.Node, "err", err)
	}); err != nil {
		return nil, err
	}
	kick := func(any) { d.health.answered(); d.poke() }
	if _, err := d.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    kick,
		UpdateFunc: func(_, _ any) { d.health.answered(); d.poke() },
		DeleteFunc: kick,
	}); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Discoverer) poke() {
	select {
	case d.kick <- struct{}{}:
	default: // a recomputation is already due; it reads the latest cache
	}
}

// Run watches the pods and hands every change of the target set to sink
// until ctx ends; it returns once the informer has stopped. Events that
// arrive while the set is being applied are coalesced into one update.
func (d *Discoverer) Run(ctx context.Context, sink Sink) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.informer.RunWithContext(ctx)
	}()
	defer func() { <-done }()
	if d.opts.Nodes != nil {
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		checkNode(nctx, d.opts.Nodes, d.opts.Node, d.opts.Logger)
		cancel()
	}
	if !cache.WaitForCacheSync(ctx.Done(), d.informer.HasSynced) {
		return ctx.Err()
	}
	d.health.synced()
	d.opts.Logger.Info("kubernetes discovery synced", "node", d.opts.Node)
	d.update(ctx, sink)
	// The node may stay empty with no event to say so: look again now
	// and then.
	// The same tick applies the staleness rule.
	tick := time.NewTicker(min(d.opts.EmptyNodeWarning/4, d.opts.StaleAfter/8, 15*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-d.kick:
			d.update(ctx, sink)
		case <-tick.C:
			d.health.checkEmpty()
			d.health.checkStale(d.opts.StaleAfter)
		}
	}
}

// Health is discovery's view of itself: synced, the API server's last
// answer, the node's pods and the invalid ones.
func (d *Discoverer) Health() Health { return d.health.get() }

// Ready is nil once the node's pods have been listed; before that the
// daemon does not know its targets yet.
func (d *Discoverer) Ready() error {
	if d.health.get().Synced {
		return nil
	}
	return fmt.Errorf("kubernetes discovery has not listed the pods of node %s yet", d.opts.Node)
}

// update recomputes the targets from the cache and applies them when
// they changed.
func (d *Discoverer) update(ctx context.Context, sink Sink) {
	var ts []config.Target
	invalid := map[string]string{}
	invalidErrs := map[string]error{}
	pods := 0
	for _, obj := range d.informer.GetStore().List() {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			continue
		}
		pods++
		pts, err := d.opts.Rules.Targets(pod)
		if err != nil {
			invalid[pod.Namespace+"/"+pod.Name] = err.Error()
			invalidErrs[pod.Namespace+"/"+pod.Name] = err
			continue
		}
		ts = append(ts, pts...)
	}
	d.health.observe(pods, invalidErrs)
	slices.SortFunc(ts, func(a, b config.Target) int { return strings.Compare(a.Name, b.Name) })
	for pod, why := range invalid {
		if d.invalidPods[pod] != why {
			d.opts.Logger.Warn("pod annotated for scraping cannot be scraped", "pod", pod, "err", why)
		}
	}
	d.invalidPods = invalid
	d.invalid.Set(float64(len(invalid)))
	d.targets.Set(float64(len(ts)))
	if reflect.DeepEqual(ts, d.last) {
		return
	}
	if err := sink.SetDiscovered(ts); err != nil {
		if ctx.Err() != nil {
			return // stopping: the exporter refuses changes
		}
		d.opts.Logger.Error("applying discovered targets", "err", err)
		return
	}
	d.last = ts
	d.opts.Logger.Info("discovered targets changed", "targets", len(ts))
}

// slim is the informer's transform: it keeps the fields Rules read.
func slim(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a tombstone
	}
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID,
			ResourceVersion: pod.ResourceVersion,
			Labels:          pod.Labels, Annotations: pod.Annotations,
		},
		Spec:   corev1.PodSpec{NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase, PodIP: pod.Status.PodIP},
	}
	for _, c := range pod.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	return out, nil
}

// String describes the discoverer for logs.
func (d *Discoverer) String() string { return fmt.Sprintf("pods on node %s", d.opts.Node) }
