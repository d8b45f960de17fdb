package gpu

import (
	"fmt"
	"strings"
)

// render writes devices one per line, every field named, for golden files
// and comparisons.
func render(devs []Device) string {
	var b strings.Builder
	for _, d := range devs {
		fmt.Fprintf(&b, "gpu=%d uuid=%s name=%q power_w=%v limit_w=%v energy_j=%v sm_hz=%v sm_max_hz=%v throttle=%v util=%v mem_used_b=%v mem_total_b=%v",
			d.Index, d.UUID, d.Name, d.PowerW, d.PowerLimitW, d.EnergyJ, d.SMClockHz, d.SMClockMaxHz, d.Throttle,
			d.Utilization, d.MemUsedB, d.MemTotalB)
		if d.PIDsOK {
			fmt.Fprintf(&b, " pids=%v", d.PIDs)
		} else {
			b.WriteString(" pids=absent")
		}
		if len(d.MIGUUIDs) > 0 {
			fmt.Fprintf(&b, " mig=%v", d.MIGUUIDs)
		}
		for _, p := range d.Pods {
			fmt.Fprintf(&b, " pod=%s/%s/%s", p.Namespace, p.Pod, p.Container)
			if p.MIGInstance != "" {
				fmt.Fprintf(&b, "@gi%s", p.MIGInstance)
			}
		}
		if d.Err != nil {
			fmt.Fprintf(&b, " err=%q", d.Err)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
