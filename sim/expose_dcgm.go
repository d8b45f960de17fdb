package sim

import "strconv"

// dcgmClockEvents maps dcgm-exporter's clock_event label values to the
// simulated throttle reasons; the others never fire here.
var dcgmClockEvents = []struct{ event, reason string }{
	{"gpu_idle", ReasonGPUIdle}, {"clocks_setting", ""}, {"power_cap", ReasonSWPowerCap},
	{"hw_slowdown", ReasonHWSlowdown}, {"sync_boost", ""}, {"sw_thermal", ReasonSWThermal},
	{"hw_thermal", ReasonHWThermal}, {"hw_power_brake", ""}, {"display_clocks", ""},
}

// dcgmText renders the GPU as dcgm-exporter 4.x does, with its label
// layout (gpu, UUID, pci_bus_id, device, modelName, Hostname).
func (e *Engine) dcgmText() string {
	x := &expo{num: goInt}
	g := e.GPU()
	spec := &e.cfg.GPU
	labels := []label{
		{"gpu", strconv.Itoa(spec.Index)}, {"UUID", spec.UUID}, {"pci_bus_id", spec.PCIBusID},
		{"device", "nvidia" + strconv.Itoa(spec.Index)}, {"modelName", spec.ModelName}, {"Hostname", spec.Hostname},
	}
	ints := func(name, help, typ string, v float64) {
		x.family(name, help, typ)
		x.raw(name, labels, goInt(v))
	}
	fixed := func(name, help string, v float64) {
		x.family(name, help, "gauge")
		x.raw(name, labels, goFixed(v))
	}
	ints("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", g.SMClockMHz)
	if spec.ExportMaxSMClock {
		ints("DCGM_FI_DEV_MAX_SM_CLOCK", "Maximum SM clock frequency (in MHz).", "gauge", spec.MaxSMClockMHz)
	}
	ints("DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge", g.MemClockMHz)
	ints("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", g.TempC)
	fixed("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", g.PowerW)
	x.family("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter")
	x.raw("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, strconv.FormatInt(int64(g.EnergyMJ), 10))
	ints("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", 100*g.Util)
	ints("DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", 100*g.DRAMActive)
	ints("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", g.MemoryTotalMiB-g.MemoryUsedMiB)
	ints("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", g.MemoryUsedMiB)
	fixed("DCGM_FI_DEV_POWER_MGMT_LIMIT", "Power management limit (in W).", g.PowerLimitW)
	fixed("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", g.Util)
	fixed("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", g.TensorActive)
	fixed("DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", g.DRAMActive)
	x.family("DCGM_EXP_CLOCK_EVENTS_COUNT", "reported clock events", "counter")
	for _, ev := range dcgmClockEvents {
		x.raw("DCGM_EXP_CLOCK_EVENTS_COUNT", append(labels[:6:6], label{"clock_event", ev.event}), strconv.FormatUint(g.ThrottleRecent[ev.reason], 10))
	}
	return x.b.String()
}
