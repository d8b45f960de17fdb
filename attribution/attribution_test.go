package attribution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type fakeLister struct {
	pods []PodDevices
	err  error
}

func (f fakeLister) List(context.Context) ([]PodDevices, error) { return f.pods, f.err }

func renderResult(gpus []GPU, r Result) string {
	var b strings.Builder
	for i, shares := range r.Shares {
		fmt.Fprintf(&b, "%d:", gpus[i].Index)
		for _, s := range shares {
			fmt.Fprintf(&b, " %s/%s/%s/%.2f", s.Target, s.Method, s.Split, s.Fraction)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func nodeGPUs() []GPU {
	return []GPU{
		{Index: 0, UUID: "GPU-aaaa", PIDs: []int{102}}, // a vLLM worker; pid 100 listens on 8000
		{Index: 1, UUID: "GPU-bbbb", PIDs: []int{200}}, // SGLang listening on [::]:9000 itself
		{Index: 2, UUID: "GPU-cccc", PIDs: []int{300}}, // no listener anywhere up its tree
		{Index: 3, UUID: "GPU-dddd", MIGUUIDs: []string{"MIG-eeee"}},
		{Index: 4, UUID: "GPU-ffff"},                                // time-sliced between two pods
		{Index: 5, UUID: "GPU-gggg", Pods: []Pod{{"llm", "tgi-0"}}}, // dcgm-exporter's pod label
		{Index: 6, UUID: "GPU-hhhh"},
		{Index: 7, UUID: "GPU-iiii", PIDs: []int{500}}, // exited since it was listed
	}
}

func nodeTargets() []Target {
	return []Target{
		{Name: "vllm-local", Port: 8000, Tokens: 300},
		{Name: "sglang-local", Port: 9000},
		{Name: "mig-pod", Pod: Pod{"llm", "small"}},
		{Name: "shared-a", Pod: Pod{"llm", "shared-a"}, Tokens: 30},
		{Name: "shared-b", Pod: Pod{"llm", "shared-b"}, Tokens: 10},
		{Name: "tgi", Pod: Pod{"llm", "tgi-0"}},
		{Name: "pinned", GPUs: []string{"6"}},
		{Name: "pinned2", GPUs: []string{"gpu-hhhh"}},
		// Configured GPUs win over the pod-resources answer for the same target.
		{Name: "override", Pod: Pod{"llm", "override"}, GPUs: []string{"GPU-cccc"}},
		{Name: "ghost", GPUs: []string{"GPU-zzzz"}},
	}
}

func nodePods() []PodDevices {
	return []PodDevices{
		{Namespace: "llm", Pod: "small", Resource: "nvidia.com/mig-1g.10gb", DeviceIDs: []string{"MIG-eeee"}},
		{Namespace: "llm", Pod: "shared-a", Resource: "nvidia.com/gpu.shared", DeviceIDs: []string{"GPU-ffff::0"}},
		{Namespace: "llm", Pod: "shared-b", Resource: "nvidia.com/gpu.shared", DeviceIDs: []string{"GPU-ffff::1"}},
		{Namespace: "llm", Pod: "override", Resource: "nvidia.com/gpu", DeviceIDs: []string{"GPU-aaaa"}},
		{Namespace: "other", Pod: "not-a-target", Resource: "nvidia.com/gpu", DeviceIDs: []string{"GPU-iiii"}},
	}
}

func TestAttribute(t *testing.T) {
	a := New(Options{Pods: fakeLister{pods: nodePods()}, Proc: fakeProc(t)})
	gpus := nodeGPUs()
	r := a.Attribute(context.Background(), gpus, nodeTargets())
	want := `0: vllm-local/process/none/1.00
1: sglang-local/process/none/1.00
2: override/config/none/1.00
3: mig-pod/pod-resources/none/1.00
4: shared-a/pod-resources/tokens/0.75 shared-b/pod-resources/tokens/0.25
5: tgi/pod-resources/none/1.00
6: pinned/config/equal/0.50 pinned2/config/equal/0.50
7:
`
	if got := renderResult(gpus, r); got != want {
		t.Errorf("attribution:\n%s\nwant:\n%s", got, want)
	}
	if len(r.Errors) != 1 || r.Errors[0].Method != MethodConfig || !strings.Contains(r.Errors[0].Error(), `target ghost: no GPU "GPU-zzzz"`) {
		t.Errorf("errors = %v, want one config error for ghost", r.Errors)
	}
}

// The kubelet failing leaves its stale answer (when the lister returns
// one), the backend's pod labels and the other methods working.
func TestAttributePodResourcesFailing(t *testing.T) {
	gpus := nodeGPUs()
	down := errors.New("kubelet pod-resources: connection refused")
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"stale answer", Options{Pods: fakeLister{pods: nodePods(), err: down}}, "3: mig-pod/pod-resources/none/1.00"},
		{"no answer", Options{Pods: fakeLister{err: down}}, "3:\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New(c.opts).Attribute(context.Background(), gpus, nodeTargets())
			got := renderResult(gpus, r)
			if !strings.Contains(got, c.want) || !strings.Contains(got, "5: tgi/pod-resources/none/1.00") {
				t.Errorf("attribution:\n%s\nwant a line %q and tgi from the backend's pod label", got, c.want)
			}
			var podErr bool
			for _, e := range r.Errors {
				podErr = podErr || (e.Method == MethodPodResources && errors.Is(e, down))
			}
			if !podErr {
				t.Errorf("errors = %v, want the pod-resources failure", r.Errors)
			}
		})
	}
}

// Shares of a shared GPU follow the tokens of the interval.
func TestSplit(t *testing.T) {
	targets := map[string]*Target{"a": {Name: "a", Tokens: 90}, "b": {Name: "b", Tokens: 10}, "c": {Name: "c", Tokens: -5}}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{[]string{"a"}, "a none 1"},
		{[]string{"a", "b"}, "a tokens 0.9, b tokens 0.1"},
		{[]string{"a", "c"}, "a tokens 1, c tokens 0"}, // a counter reset is no negative share
		{[]string{"c", "x"}, "c equal 0.5, x equal 0.5"},
		{nil, ""},
	} {
		var parts []string
		for _, s := range split(MethodPodResources, c.names, targets) {
			parts = append(parts, fmt.Sprintf("%s %s %g", s.Target, s.Split, s.Fraction))
		}
		if got := strings.Join(parts, ", "); got != c.want {
			t.Errorf("split(%v) = %s, want %s", c.names, got, c.want)
		}
	}
}

func TestMatchDevice(t *testing.T) {
	gpus := []GPU{
		{Index: 0, UUID: "GPU-1111"},
		{Index: 1, UUID: "GPU-2222", MIGUUIDs: []string{"MIG-9999"}},
	}
	for id, want := range map[string]int{
		"GPU-1111": 0, "gpu-1111": 0, " GPU-2222 ": 1, "GPU-2222::3": 1,
		"MIG-9999": 1, "MIG-GPU-2222/1/0": 1, "1": 1, "0": 0,
		"GPU-3333": -1, "7": -1, "MIG-8888": -1,
	} {
		i, ok := matchDevice(id, gpus)
		if !ok {
			i = -1
		}
		if i != want {
			t.Errorf("matchDevice(%q) = %d, want %d", id, i, want)
		}
	}
}
