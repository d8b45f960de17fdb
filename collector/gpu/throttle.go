package gpu

import "strings"

// Reasons is a set of clock-event (throttle) reasons with NVML's bit values
// (nvmlClocksEventReason*, identical to DCGM_CLOCKS_EVENT_REASON_*). OK is
// false when the backend could not read them.
type Reasons struct {
	Mask uint64
	OK   bool
}

// ReasonName pairs a bit with the name used in the reason label.
type ReasonName struct {
	Bit  uint64
	Name string
}

// KnownReasons lists the decoded reasons in label order. Bits outside
// this list (board_limit, reliability on newer drivers) are ignored.
func KnownReasons() []ReasonName {
	return []ReasonName{
		{0x1, "gpu_idle"},
		{0x2, "applications_clocks_setting"},
		{0x4, "sw_power_cap"},
		{0x8, "hw_slowdown"},
		{0x10, "sync_boost"},
		{0x20, "sw_thermal_slowdown"},
		{0x40, "hw_thermal_slowdown"},
		{0x80, "hw_power_brake_slowdown"},
		{0x100, "display_clocks_setting"},
	}
}

// Names returns the active known reasons in label order.
func (r Reasons) Names() []string {
	var out []string
	for _, k := range KnownReasons() {
		if r.Mask&k.Bit != 0 {
			out = append(out, k.Name)
		}
	}
	return out
}

// String renders the set for logs and golden files.
func (r Reasons) String() string {
	if !r.OK {
		return "absent"
	}
	names := r.Names()
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}
