package attribution

import "context"

// byPods claims GPUs for targets discovered as pods: from the devices the
// kubelet assigned to the pod's containers, and from the pods the GPU
// backend itself reports (dcgm-exporter asks the kubelet the same question).
// A List error still lets the backend's pods and a stale answer count.
func (a *Attributor) byPods(ctx context.Context, gpus []GPU, targets []Target, configured map[string]bool, c *claims) error {
	want := map[Pod][]string{}
	for _, t := range targets {
		if !configured[t.Name] && t.Pod.Name != "" {
			want[t.Pod] = append(want[t.Pod], t.Name)
		}
	}
	if len(want) == 0 {
		return nil
	}
	claim := func(gpu int, p Pod) {
		if c.has(gpu, MethodConfig) {
			return
		}
		for _, name := range want[p] {
			c.add(gpu, name, MethodPodResources)
		}
	}
	for i, g := range gpus {
		for _, p := range g.Pods {
			claim(i, p)
		}
	}
	if a.opts.Pods == nil {
		return nil
	}
	list, err := a.opts.Pods.List(ctx)
	for _, pd := range list {
		p := Pod{Namespace: pd.Namespace, Name: pd.Pod}
		if _, ok := want[p]; !ok {
			continue
		}
		for _, id := range pd.DeviceIDs {
			if i, ok := matchDevice(id, gpus); ok {
				claim(i, p)
			}
		}
	}
	return err
}
