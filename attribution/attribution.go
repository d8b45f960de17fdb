package attribution

import (
	"context"
	"fmt"
)

// Method is how a GPU was tied to a target; the value of the method label.
type Method string

// Methods, strongest first.
const (
	MethodConfig       Method = "config"
	MethodPodResources Method = "pod-resources"
	MethodProcess      Method = "process"
)

// Split says how a shared GPU was divided; the value of the split label.
type Split string

// Splits.
const (
	SplitNone   Split = "none"   // one target holds the GPU
	SplitTokens Split = "tokens" // by generation tokens in the interval
	SplitEqual  Split = "equal"  // shared, and no holder produced tokens
)

// GPU is what attribution needs to know about one GPU.
type GPU struct {
	Index    int
	UUID     string
	MIGUUIDs []string
	PIDs     []int // host PIDs of compute processes
	Pods     []Pod // pods the GPU backend itself reports (dcgm-exporter)
}

// Pod names a pod.
type Pod struct {
	Namespace, Name string
}

// Target is one engine target as the exporter knows it this interval.
type Target struct {
	Name string
	Pod  Pod // zero when not discovered from Kubernetes
	// Port is the engine's TCP port on this host; 0 when not local.
	Port int
	// GPUs configured for the target (UUIDs, MIG UUIDs or indexes). When
	// set they are the target's GPUs and no other method is asked.
	GPUs []string
	// Tokens are the generation tokens the target produced in the interval.
	Tokens float64
}

// Share is one target's part of one GPU.
type Share struct {
	Target   string
	Method   Method
	Split    Split
	Fraction float64 // 0..1; a GPU's shares add up to 1
}

// Result is one round of attribution.
type Result struct {
	// Shares holds, per GPU (same order as the gpus given), its holders;
	// nil for a GPU no target holds.
	Shares [][]Share
	// Errors are the problems of this round, per method. The result is
	// still the best the other methods could do.
	Errors []*MethodError
}

// MethodError is a failure of one method in one round.
type MethodError struct {
	Method Method
	Err    error
}

func (e *MethodError) Error() string { return fmt.Sprintf("attribution by %s: %v", e.Method, e.Err) }
func (e *MethodError) Unwrap() error { return e.Err }

// PodLister lists the devices the kubelet assigned to containers.
type PodLister interface {
	List(ctx context.Context) ([]PodDevices, error)
}

// Options configures an Attributor. Nil sources are not asked.
type Options struct {
	Pods PodLister
	Proc *Procfs
}

// Attributor ties GPUs to targets.
type Attributor struct {
	opts Options
}

// New returns an Attributor using the given sources.
func New(opts Options) *Attributor { return &Attributor{opts: opts} }

// Attribute decides, for each GPU, which targets hold it and in what
// share. Per GPU the strongest method with an answer wins: config, then
// pod-resources, then process.
func (a *Attributor) Attribute(ctx context.Context, gpus []GPU, targets []Target) Result {
	r := Result{Shares: make([][]Share, len(gpus))}
	c := newClaims(len(gpus))
	configured := map[string]bool{}
	for _, t := range targets {
		if len(t.GPUs) == 0 {
			continue
		}
		configured[t.Name] = true
		for _, id := range t.GPUs {
			i, ok := matchDevice(id, gpus)
			if !ok {
				r.fail(MethodConfig, fmt.Errorf("target %s: no GPU %q on this node", t.Name, id))
				continue
			}
			c.add(i, t.Name, MethodConfig)
		}
	}
	if err := a.byPods(ctx, gpus, targets, configured, c); err != nil {
		r.fail(MethodPodResources, err)
	}
	if err := a.byProcess(gpus, targets, configured, c); err != nil {
		r.fail(MethodProcess, err)
	}
	byName := make(map[string]*Target, len(targets))
	for i := range targets {
		byName[targets[i].Name] = &targets[i]
	}
	for i := range gpus {
		m, names := c.strongest(i)
		r.Shares[i] = split(m, names, byName)
	}
	return r
}

func (r *Result) fail(m Method, err error) {
	r.Errors = append(r.Errors, &MethodError{Method: m, Err: err})
}

// claims collects, per GPU and method, the targets that claim it.
type claims struct {
	perGPU []map[Method][]string
}

func newClaims(n int) *claims { return &claims{perGPU: make([]map[Method][]string, n)} }

func (c *claims) add(gpu int, target string, m Method) {
	if c.perGPU[gpu] == nil {
		c.perGPU[gpu] = map[Method][]string{}
	}
	for _, t := range c.perGPU[gpu][m] {
		if t == target {
			return
		}
	}
	c.perGPU[gpu][m] = append(c.perGPU[gpu][m], target)
}

func (c *claims) has(gpu int, m Method) bool { return len(c.perGPU[gpu][m]) > 0 }

// strongest returns the method with claims that ranks first, and its targets.
func (c *claims) strongest(gpu int) (Method, []string) {
	for _, m := range []Method{MethodConfig, MethodPodResources, MethodProcess} {
		if ts := c.perGPU[gpu][m]; len(ts) > 0 {
			return m, ts
		}
	}
	return "", nil
}
