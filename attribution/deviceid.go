package attribution

import (
	"strconv"
	"strings"
)

// matchDevice finds the GPU a device id names. The NVIDIA device plugin
// reports GPU UUIDs (GPU-...), MIG UUIDs (MIG-... since R470, or
// MIG-GPU-<uuid>/<gi>/<ci> before), time-sliced replicas as <id>::<n>, and
// with deviceIDStrategy=index plain indexes; configuration may use any.
func matchDevice(id string, gpus []GPU) (int, bool) {
	id = strings.TrimSpace(id)
	if base, _, ok := strings.Cut(id, "::"); ok {
		id = base
	}
	if rest, ok := strings.CutPrefix(id, "MIG-GPU-"); ok {
		parent, _, _ := strings.Cut(rest, "/")
		id = "GPU-" + parent
	}
	for i, g := range gpus {
		if g.UUID != "" && strings.EqualFold(g.UUID, id) {
			return i, true
		}
		for _, m := range g.MIGUUIDs {
			if strings.EqualFold(m, id) {
				return i, true
			}
		}
	}
	if n, err := strconv.Atoi(id); err == nil {
		for i, g := range gpus {
			if g.Index == n {
				return i, true
			}
		}
	}
	return 0, false
}
