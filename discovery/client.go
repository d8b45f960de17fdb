package discovery

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// PodClient lists and watches pods in every namespace. client-go's typed
// pod client (clientset.CoreV1().Pods("")) is one; NewPodClient makes a
// smaller one.
type PodClient interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// podClient reads pods through a REST client that knows the core/v1 types
// only. client-go's clientset registers every API group of Kubernetes in
// its scheme: linked into the daemon, that doubled the binary and added
// about 28 MiB of resident memory, for one resource.
type podClient struct {
	rc     rest.Interface
	params runtime.ParameterCodec
}

// NewPodClient returns a PodClient for the API server of cfg.
func NewPodClient(cfg *rest.Config) (PodClient, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &podClient{rc: rc, params: runtime.NewParameterCodec(scheme)}, nil
}

func (p *podClient) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	out := &corev1.PodList{}
	err := p.rc.Get().Resource("pods").VersionedParams(&opts, p.params).Do(ctx).Into(out)
	return out, err
}

func (p *podClient) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.rc.Get().Resource("pods").VersionedParams(&opts, p.params).Watch(ctx)
}

// GetNode reads the Node object name (discovery's one-time check that
// the node exists; needs get on nodes).
func (p *podClient) GetNode(ctx context.Context, name string) error {
	return p.rc.Get().Resource("nodes").Name(name).Do(ctx).Error()
}
