package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/goodput-exporter/goodput-exporter/discovery"
	"github.com/goodput-exporter/goodput-exporter/exporter"
)

// kubernetesFlags turn on discovery of the engines among this node's pods.
type kubernetesFlags struct {
	Discovery       bool     `name:"kubernetes.discovery" help:"Scrape the pods of this node annotated goodput-exporter.io/scrape=\"true\" (see the README), beside the configured targets. Needs get, list and watch on pods."`
	NodeName        string   `name:"kubernetes.node-name" env:"NODE_NAME" placeholder:"NODE" help:"The node whose pods are read (default: $NODE_NAME, from the downward API)."`
	PromAnnotations bool     `name:"kubernetes.prometheus-annotations" default:"true" negatable:"" help:"Also scrape pods annotated prometheus.io/scrape=\"true\" (with prometheus.io/port, /path, /scheme) that have no goodput-exporter.io/scrape annotation."`
	PodLabels       []string `name:"kubernetes.pod-label" placeholder:"LABEL" help:"A pod label to copy onto a discovered target's series (repeatable); app.kubernetes.io/name becomes app_kubernetes_io_name."`
	Kubeconfig      string   `name:"kubeconfig" type:"path" placeholder:"FILE" help:"Reach the API server through this kubeconfig instead of the pod's ServiceAccount, to run outside the cluster. Without it: $KUBECONFIG, then ~/.kube/config, then the in-cluster configuration."`
	WaitForSync     bool     `name:"kubernetes.wait-for-sync" default:"true" negatable:"" help:"/-/ready answers 503 until discovery has listed this node's pods once."`
	CheckNode       bool     `name:"kubernetes.check-node" default:"true" negatable:"" help:"Look the node up once at start and warn when it does not exist (needs get on nodes, the chart's rbac.nodeCheck; skipped with a note without it)."`
}

func (k *kubernetesFlags) validate() error {
	if !k.Discovery {
		return nil
	}
	if k.NodeName == "" {
		return errors.New("--kubernetes.discovery needs --kubernetes.node-name or $NODE_NAME (the downward API's spec.nodeName)")
	}
	if err := discovery.CheckPodLabels(k.PodLabels); err != nil {
		return fmt.Errorf("--kubernetes.pod-label: %w", err)
	}
	return nil
}

// start runs discovery until ctx ends, feeding ex; the returned function
// waits for it to stop. Without --kubernetes.discovery it does nothing.
func (k *kubernetesFlags) start(ctx context.Context, ex *exporter.Exporter, logger *slog.Logger) (func(), error) {
	if !k.Discovery {
		return func() {}, nil
	}
	// client-go logs through klog (a watch that ends, a relist): into the
	// daemon's log, in its format.
	klog.SetSlogLogger(logger.With("component", "client-go"))
	rc, err := k.restConfig()
	if err != nil {
		return nil, fmt.Errorf("--kubernetes.discovery: %w", err)
	}
	rc.UserAgent = "goodput-exporter"
	client, err := discovery.NewPodClient(rc)
	if err != nil {
		return nil, fmt.Errorf("--kubernetes.discovery: %w", err)
	}
	opts := discovery.Options{
		Rules: discovery.Rules{Node: k.NodeName, PrometheusAnnotations: k.PromAnnotations, PodLabels: k.PodLabels},
		Pods:  client, Logger: logger.With("component", "kubernetes"), Registerer: ex.Registry(),
	}
	if ng, ok := client.(discovery.NodeGetter); ok && k.CheckNode {
		opts.Nodes = ng
	}
	d, err := discovery.New(opts)
	if err != nil {
		return nil, err
	}
	if k.WaitForSync {
		ex.AddReadyCheck(d.Ready)
	}
	ex.AddNote(func() exporter.Note {
		h := d.Health()
		failing, lines := h.Summary()
		return exporter.Note{Title: "Kubernetes discovery, node " + h.Node, Failing: failing, Lines: lines}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx, ex); err != nil && ctx.Err() == nil {
			logger.Error("kubernetes discovery stopped", "err", err)
		}
	}()
	return func() { <-done }, nil
}

// restConfig finds the API server the client-go way: --kubeconfig, then
// $KUBECONFIG, then ~/.kube/config, then the pod's ServiceAccount.
func (k *kubernetesFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.Kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) and not running in a pod (no in-cluster configuration)")
		}
		return nil, err
	}
	return rc, nil
}
