package discovery

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/goodput-exporter/goodput-exporter/config"
)

// The annotations a pod sets to be scraped.
const (
	// AnnotationScrape "true" makes the pod a target; "false" keeps it out
	// even when it carries prometheus.io/scrape "true".
	AnnotationScrape = "goodput-exporter.io/scrape"
	// AnnotationPort is the port of the engine's /metrics: a number, or
	// the name of a container port. Default: every container's first
	// declared TCP port, one target per container.
	AnnotationPort = "goodput-exporter.io/port"
	// AnnotationPath is the path of the engine's metrics (default /metrics).
	AnnotationPath = "goodput-exporter.io/path"
	// AnnotationScheme is http (default) or https.
	AnnotationScheme = "goodput-exporter.io/scheme"
	// AnnotationEngine is auto (default), vllm, sglang, llamacpp, tgi,
	// triton, trtllm or dynamo.
	AnnotationEngine = "goodput-exporter.io/engine"
	// AnnotationModel is the model label for engines whose series carry
	// none (llama.cpp).
	AnnotationModel = "goodput-exporter.io/model"
	// AnnotationProxy "true" says the pod's traffic goes through the
	// measuring proxy sidecar (docs/proxy.md): its goodput is exact.
	AnnotationProxy = "goodput-exporter.io/proxy"

	// The common Prometheus annotations, read when the pod has no
	// goodput-exporter.io/scrape annotation (unless switched off).
	PromScrape = "prometheus.io/scrape"
	PromPort   = "prometheus.io/port"
	PromPath   = "prometheus.io/path"
	PromScheme = "prometheus.io/scheme"
)

// The labels a discovered target's series carry besides target.
const (
	LabelNamespace = "namespace"
	LabelPod       = "pod"
	LabelContainer = "container"
)

var engines = []string{"auto", "vllm", "sglang", "llamacpp", "tgi", "triton", "trtllm", "dynamo"}

// maxModel bounds the model annotation, a label value on every series.
const maxModel = 256

// Rules say which pods are targets and how they are labelled.
type Rules struct {
	// Node is the node whose pods are read; pods elsewhere are ignored.
	Node string
	// PrometheusAnnotations reads prometheus.io/scrape, /port, /path and
	// /scheme when a pod has no goodput-exporter.io/scrape annotation.
	PrometheusAnnotations bool
	// PodLabels are the pod labels copied onto the target's series, by
	// their Kubernetes name; see LabelName for the name they take.
	PodLabels []string
}

var invalidLabelChar = regexp.MustCompile(`[^a-zA-Z0-9_]`)

// LabelName is the Prometheus label name a pod label is copied to: every
// character outside [a-zA-Z0-9_] becomes _, and a leading digit gets a _
// in front (app.kubernetes.io/name becomes app_kubernetes_io_name), as
// Prometheus' Kubernetes discovery names __meta_kubernetes_pod_label_*.
func LabelName(podLabel string) string {
	n := invalidLabelChar.ReplaceAllString(podLabel, "_")
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		n = "_" + n
	}
	return n
}

// CheckPodLabels reports pod labels that cannot be copied: their label
// name would be one the daemon or Prometheus sets, or two of them would
// take the same name.
func CheckPodLabels(labels []string) error {
	var errs []error
	seen := map[string]string{}
	for _, l := range labels {
		n := LabelName(l)
		switch {
		case l == "":
			errs = append(errs, errors.New("an empty pod label name"))
		case slices.Contains(config.ReservedLabels, n) || n == LabelContainer || strings.HasPrefix(n, "__"):
			errs = append(errs, fmt.Errorf("pod label %q would be copied to %q, a label the exporter or Prometheus sets", l, n))
		case seen[n] != "":
			errs = append(errs, fmt.Errorf("pod labels %q and %q would both be copied to %q", seen[n], l, n))
		}
		seen[n] = l
	}
	return errors.Join(errs...)
}

// Targets returns the targets of one pod: none when it is not annotated
// for scraping, not on the node, not running or has no IP yet. An error
// says why a pod annotated for scraping cannot be scraped (a bad port,
// engine or scheme); it then has no targets.
func (r *Rules) Targets(pod *corev1.Pod) ([]config.Target, error) {
	if pod.Spec.NodeName != r.Node || pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
		return nil, nil
	}
	ann := pod.Annotations
	get := func(key, prom string) string {
		if v, ok := ann[key]; ok {
			return strings.TrimSpace(v)
		}
		if r.PrometheusAnnotations && prom != "" {
			return strings.TrimSpace(ann[prom])
		}
		return ""
	}
	switch scrape := get(AnnotationScrape, PromScrape); scrape {
	case "true":
	case "", "false":
		return nil, nil
	default:
		return nil, invalid("scrape", fmt.Errorf("scrape annotation %q: want \"true\" or \"false\"", scrape))
	}
	scheme := get(AnnotationScheme, PromScheme)
	switch scheme {
	case "":
		scheme = "http"
	case "http", "https":
	default:
		return nil, invalid("scheme", fmt.Errorf("scheme %q: want http or https", scheme))
	}
	path := get(AnnotationPath, PromPath)
	if path == "" {
		path = "/metrics"
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, "?# ") {
		return nil, invalid("path", fmt.Errorf("path %q: want an absolute path without query", path))
	}
	engine := get(AnnotationEngine, "")
	if engine == "" {
		engine = "auto"
	}
	if !slices.Contains(engines, engine) {
		return nil, invalid("engine", fmt.Errorf("engine %q: want one of %v", engine, engines))
	}
	model := get(AnnotationModel, "")
	if !utf8.ValidString(model) || len(model) > maxModel {
		return nil, invalid("model", fmt.Errorf("model annotation: want UTF-8 of at most %d bytes", maxModel))
	}
	proxied := false
	switch v := get(AnnotationProxy, ""); v {
	case "true":
		proxied = true
	case "", "false":
	default:
		return nil, invalid("proxy", fmt.Errorf("proxy annotation %q: want \"true\" or \"false\"", v))
	}
	eps, err := endpoints(pod, get(AnnotationPort, PromPort))
	if err != nil {
		return nil, invalid("port", err)
	}
	out := make([]config.Target, 0, len(eps))
	for _, ep := range eps {
		name := pod.Namespace + "/" + pod.Name
		if len(pod.Spec.Containers) > 1 && ep.container != "" {
			name += "/" + ep.container
		}
		labels := map[string]string{
			LabelNamespace: pod.Namespace,
			LabelPod:       pod.Name,
			LabelContainer: ep.container,
		}
		for _, l := range r.PodLabels {
			if v, ok := pod.Labels[l]; ok {
				labels[LabelName(l)] = v
			}
		}
		out = append(out, config.Target{
			Name:      name,
			URL:       scheme + "://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(ep.port))) + path,
			Engine:    engine,
			Model:     model,
			Labels:    labels,
			Namespace: pod.Namespace,
			Pod:       pod.Name,
			Proxied:   proxied,
		})
	}
	return out, nil
}

type endpoint struct {
	container string // "" when no container declares the port
	port      int32
}

// endpoints resolves the port annotation: a number (the container that
// declares it, if any), a container port's name, or, without one, the
// first TCP port each container declares.
func endpoints(pod *corev1.Pod, port string) ([]endpoint, error) {
	if port == "" {
		var out []endpoint
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
					out = append(out, endpoint{c.Name, p.ContainerPort})
					break
				}
			}
		}
		if len(out) == 0 {
			return nil, errors.New("no port annotation and no container declares a TCP port")
		}
		return out, nil
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("port %d out of range", n)
		}
		ep := endpoint{port: int32(n)}
		if len(pod.Spec.Containers) == 1 {
			ep.container = pod.Spec.Containers[0].Name
		}
		for _, c := range pod.Spec.Containers {
			for _, p := range c.Ports {
				if p.ContainerPort == int32(n) {
					ep.container = c.Name
				}
			}
		}
		return []endpoint{ep}, nil
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port {
				return []endpoint{{c.Name, p.ContainerPort}}, nil
			}
		}
	}
	return nil, fmt.Errorf("port %q is neither a number nor the name of a container port", port)
}

// InvalidPodError says why a pod annotated for scraping cannot be
// scraped. Reason is one of a few fixed words (scrape, scheme, path,
// engine, model, port), fit for a label value; the error's text names the
// annotation's value.
type InvalidPodError struct {
	Reason string
	Err    error
}

func (e *InvalidPodError) Error() string { return e.Err.Error() }
func (e *InvalidPodError) Unwrap() error { return e.Err }

func invalid(reason string, err error) error { return &InvalidPodError{Reason: reason, Err: err} }

// invalidReason is the fixed word of err, "other" for any other error.
func invalidReason(err error) string {
	var ie *InvalidPodError
	if errors.As(err, &ie) {
		return ie.Reason
	}
	return "other"
}
