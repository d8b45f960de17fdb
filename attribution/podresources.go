package attribution

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultPodResourcesSocket is where the kubelet serves pod-resources.
const DefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// PodDevices are the GPU devices the kubelet assigned to one container.
type PodDevices struct {
	Namespace, Pod, Container string
	Resource                  string // nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...
	DeviceIDs                 []string
}

// PodResourcesOptions configures the kubelet pod-resources client.
type PodResourcesOptions struct {
	Socket  string        // default DefaultPodResourcesSocket
	TTL     time.Duration // how long an answer is reused (default 10s)
	Timeout time.Duration // bound on one List call (default 2s)
	// MaxStale is how long after a good answer it is still returned,
	// alongside the error, when the kubelet fails (default 6×TTL).
	MaxStale time.Duration
}

// PodResources asks the kubelet which devices each container holds. Safe
// for concurrent use.
type PodResources struct {
	opts PodResourcesOptions

	mu      sync.Mutex
	conn    *grpc.ClientConn
	client  podresourcesv1.PodResourcesListerClient
	cached  []PodDevices
	fetched time.Time
}

// NewPodResources returns a client; it connects on first use.
func NewPodResources(opts PodResourcesOptions) *PodResources {
	if opts.Socket == "" {
		opts.Socket = DefaultPodResourcesSocket
	}
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.MaxStale <= 0 {
		opts.MaxStale = 6 * opts.TTL
	}
	return &PodResources{opts: opts}
}

// ErrSocketMissing means the pod-resources socket is not there: not a
// Kubernetes node, or the directory is not mounted into the pod.
var ErrSocketMissing = errors.New("pod-resources socket missing")

// List returns the GPU devices of every container on the node, from a
// cache younger than the TTL or from one List call bounded by the timeout.
// When the call fails, the last good answer (if younger than MaxStale) is
// returned together with the error.
func (c *PodResources) List(ctx context.Context) ([]PodDevices, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cached != nil && time.Since(c.fetched) < c.opts.TTL {
		return c.cached, nil
	}
	got, err := c.list(ctx)
	if err != nil {
		err = fmt.Errorf("kubelet pod-resources at %s: %w", c.opts.Socket, err)
		if c.cached != nil && time.Since(c.fetched) < c.opts.MaxStale {
			return c.cached, err
		}
		c.cached = nil
		return nil, err
	}
	c.cached, c.fetched = got, time.Now()
	return got, nil
}

func (c *PodResources) list(ctx context.Context) ([]PodDevices, error) {
	if _, err := os.Stat(c.opts.Socket); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (mount /var/lib/kubelet/pod-resources into the pod)", ErrSocketMissing)
		}
		return nil, err
	}
	if c.client == nil {
		conn, err := grpc.NewClient("unix://"+c.opts.Socket,
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
		if err != nil {
			return nil, err
		}
		c.conn, c.client = conn, podresourcesv1.NewPodResourcesListerClient(conn)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.client.List(ctx, &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		// The kubelet may see the propagated deadline pass before we do.
		if ctx.Err() != nil || status.Code(err) == codes.DeadlineExceeded {
			return nil, fmt.Errorf("List took longer than %v: %w", c.opts.Timeout, err)
		}
		return nil, fmt.Errorf("List: %w", err)
	}
	out := []PodDevices{}
	for _, p := range resp.GetPodResources() {
		for _, ctr := range p.GetContainers() {
			for _, d := range ctr.GetDevices() {
				if !isGPUResource(d.GetResourceName()) {
					continue
				}
				out = append(out, PodDevices{
					Namespace: p.GetNamespace(), Pod: p.GetName(), Container: ctr.GetName(),
					Resource: d.GetResourceName(), DeviceIDs: d.GetDeviceIds(),
				})
			}
		}
	}
	return out, nil
}

// isGPUResource accepts the NVIDIA device plugin's whole-GPU, shared
// (nvidia.com/gpu.shared with time-slicing renames) and MIG resources.
func isGPUResource(name string) bool {
	return strings.HasPrefix(name, "nvidia.com/gpu") || strings.HasPrefix(name, "nvidia.com/mig-")
}

// Close drops the connection.
func (c *PodResources) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn, c.client = nil, nil
	if err != nil {
		return fmt.Errorf("kubelet pod-resources: close: %w", err)
	}
	return nil
}
