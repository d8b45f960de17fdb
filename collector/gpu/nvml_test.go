//go:build cgo

package gpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeH200 is go-nvml's DGX H200 mock with the readings the mock leaves
// unset filled in: GPU i draws 100+i W, has consumed 1000*(i+1) J, runs at
// 1500 MHz of 1980, is 10*i % busy and runs PID 1000+i.
func fakeH200(t *testing.T) *server.Server {
	t.Helper()
	s := dgxh200.New()
	for i, dev := range s.Devices {
		d := dev.(*server.Device)
		d.UUID = fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", i)
		d.MemoryInfo.Used = uint64(i) << 30
		d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return uint32(100_000 + 1000*i), nvml.SUCCESS }
		d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
		d.GetPowerManagementDefaultLimitFunc = func() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
		d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return uint64(1_000_000 * (i + 1)), nvml.SUCCESS }
		d.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c != nvml.CLOCK_SM {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 1500, nvml.SUCCESS
		}
		d.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c != nvml.CLOCK_SM {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 1980, nvml.SUCCESS
		}
		d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: uint32(10 * i), Memory: 5}, nvml.SUCCESS
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{{Pid: uint32(1000 + i)}}, nvml.SUCCESS
		}
	}
	return s
}

func device(s *server.Server, i int) *server.Device { return s.Devices[i].(*server.Device) }

func newTestNVML(t *testing.T, s *server.Server) *NVML {
	t.Helper()
	b, err := newNVMLWithLib(newNVMLForwarder(s, "mock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return b
}

func TestNVMLReadsEveryField(t *testing.T) {
	s := fakeH200(t)
	device(s, 2).GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
		return nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwThermalSlowdown, nvml.SUCCESS
	}
	device(s, 2).GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 450_000, nvml.SUCCESS }
	devs, err := newTestNVML(t, s).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 8 {
		t.Fatalf("got %d GPUs, want 8", len(devs))
	}
	d := devs[2]
	want := map[string]string{
		"index":       "2",
		"uuid":        "GPU-00000002-0000-0000-0000-000000000000",
		"name":        "NVIDIA H200 141GB HBM3e",
		"power":       "102",
		"limit":       "450",
		"default":     "700",
		"energy":      "3000",
		"sm":          "1.5e+09",
		"smmax":       "1.98e+09",
		"throttle":    "sw_power_cap,hw_thermal_slowdown",
		"util":        "0.2",
		"used":        Some(2 << 30).String(),
		"total":       Some(float64(uint64(141*1024) << 20)).String(),
		"pids":        "[1002]",
		"err":         "<nil>",
		"mig":         "[]",
		"pidsPresent": "true",
	}
	got := map[string]string{
		"index": fmt.Sprint(d.Index), "uuid": d.UUID, "name": d.Name,
		"power": d.PowerW.String(), "limit": d.PowerLimitW.String(), "default": d.PowerLimitDefaultW.String(), "energy": d.EnergyJ.String(),
		"sm": d.SMClockHz.String(), "smmax": d.SMClockMaxHz.String(), "throttle": d.Throttle.String(),
		"util": d.Utilization.String(), "used": d.MemUsedB.String(), "total": d.MemTotalB.String(),
		"pids": fmt.Sprint(d.PIDs), "err": fmt.Sprint(d.Err), "mig": fmt.Sprint(d.MIGUUIDs),
		"pidsPresent": fmt.Sprint(d.PIDsOK),
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %s, want %s", k, got[k], w)
		}
	}
}

// One GPU without an energy counter, one lost, one refusing a call: each
// is reported as such and the other five read normally.
func TestNVMLPerDeviceFailures(t *testing.T) {
	s := fakeH200(t)
	device(s, 3).GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	device(s, 5).GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_GPU_IS_LOST }
	device(s, 6).GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{}, nvml.ERROR_NO_PERMISSION
	}
	devs, err := newTestNVML(t, s).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	if d := devs[3]; d.EnergyJ.OK || d.Err != nil || !d.PowerW.OK || !d.Utilization.OK {
		t.Errorf("GPU 3 (no energy counter): energy %v err %v power %v util %v; want energy absent, no error, the rest present",
			d.EnergyJ, d.Err, d.PowerW, d.Utilization)
	}
	if d := devs[5]; !errors.Is(d.Err, ErrGPULost) || d.UUID == "" || d.PowerW.OK || d.EnergyJ.OK || d.PIDsOK {
		t.Errorf("GPU 5 (lost): err %v uuid %q power %v energy %v pids %v; want lost, UUID kept, readings after the failure absent",
			d.Err, d.UUID, d.PowerW, d.EnergyJ, d.PIDsOK)
	}
	d6 := devs[6]
	if d6.Err == nil || errors.Is(d6.Err, ErrGPULost) || errors.Is(d6.Err, ErrNotSupported) {
		t.Errorf("GPU 6 (no permission): err %v, want a plain error", d6.Err)
	}
	if d6.Utilization.OK || !d6.MemUsedB.OK || !d6.PIDsOK || !d6.PowerW.OK {
		t.Errorf("GPU 6: util %v mem %v pids %v power %v; want only utilisation absent", d6.Utilization, d6.MemUsedB, d6.PIDsOK, d6.PowerW)
	}
	if !strings.Contains(fmt.Sprint(d6.Err), "ERROR_NO_PERMISSION") {
		t.Errorf("GPU 6 error %q does not name the NVML code", d6.Err)
	}
	for _, i := range []int{0, 1, 2, 4, 7} {
		d := devs[i]
		if d.Err != nil || !d.PowerW.OK || !d.EnergyJ.OK || !d.Utilization.OK {
			t.Errorf("GPU %d: err %v power %v energy %v util %v; want a full reading", i, d.Err, d.PowerW, d.EnergyJ, d.Utilization)
		}
	}
}

func TestNVMLLostHandle(t *testing.T) {
	s := fakeH200(t)
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 1 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return s.Devices[i], nvml.SUCCESS
	}
	devs, err := newTestNVML(t, s).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(devs[1].Err, ErrGPULost) || devs[1].Index != 1 {
		t.Errorf("GPU 1: %+v, want lost", devs[1])
	}
	if devs[2].Err != nil || !devs[2].PowerW.OK {
		t.Errorf("GPU 2 after a lost one: err %v power %v", devs[2].Err, devs[2].PowerW)
	}
}

func TestNVMLOldDriverUsesThrottleReasons(t *testing.T) {
	s := fakeH200(t)
	s.LookupSymbolFunc = func(sym string) error {
		if sym == "nvmlDeviceGetCurrentClocksEventReasons" {
			return errors.New("undefined symbol")
		}
		return nil
	}
	for _, dev := range s.Devices {
		d := dev.(*server.Device)
		d.GetCurrentClocksEventReasonsFunc = nil // calling it would panic
		d.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
			return nvml.ClocksThrottleReasonGpuIdle, nvml.SUCCESS
		}
	}
	devs, err := newTestNVML(t, s).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := devs[0].Throttle.String(); got != "gpu_idle" {
		t.Errorf("throttle = %s, want gpu_idle", got)
	}
}

func TestNVMLMIGDevices(t *testing.T) {
	s := fakeH200(t)
	d := device(s, 0)
	d.MigMode = nvml.DEVICE_MIG_ENABLE
	migs := []*server.Device{dgxh200.NewDevice(100), dgxh200.NewDevice(101)}
	migs[0].UUID, migs[1].UUID = "MIG-aaaa", "MIG-bbbb"
	d.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	d.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
		if n < len(migs) {
			return migs[n], nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	devs, err := newTestNVML(t, s).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(devs[0].MIGUUIDs); got != "[MIG-aaaa MIG-bbbb]" || devs[0].Err != nil {
		t.Errorf("MIG UUIDs = %s (err %v), want [MIG-aaaa MIG-bbbb]", got, devs[0].Err)
	}
	if len(devs[1].MIGUUIDs) != 0 {
		t.Errorf("GPU 1 without MIG lists %v", devs[1].MIGUUIDs)
	}
}

func TestNVMLInitFailure(t *testing.T) {
	s := fakeH200(t)
	s.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	_, err := newNVMLWithLib(newNVMLForwarder(s, "libnvidia-ml.so.1"))
	if !errors.Is(err, ErrLibraryNotFound) || !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("err = %v, want library not found naming the library", err)
	}
	s.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	_, err = newNVMLWithLib(newNVMLForwarder(s, "libnvidia-ml.so.1"))
	if err == nil || !strings.Contains(err.Error(), "ERROR_DRIVER_NOT_LOADED") {
		t.Errorf("err = %v, want the NVML code named", err)
	}
}

func TestNVMLCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newTestNVML(t, fakeH200(t)).Collect(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// On a machine without the NVIDIA driver (CI), loading the real library
// must fail with a clear error rather than crash.
func TestNewNVMLWithoutLibrary(t *testing.T) {
	if nvmlPresent() {
		t.Skip("libnvidia-ml is installed here")
	}
	b, err := NewNVML(NVMLOptions{})
	if err == nil {
		_ = b.Close()
		t.Fatal("NewNVML succeeded without libnvidia-ml")
	}
	if !errors.Is(err, ErrLibraryNotFound) || !strings.Contains(err.Error(), "cannot load libnvidia-ml.so.1") {
		t.Errorf("err = %q, want a clear library-not-found error", err)
	}
}

func nvmlPresent() bool {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/aarch64-linux-gnu"} {
		if _, err := os.Stat(filepath.Join(dir, "libnvidia-ml.so.1")); err == nil {
			return true
		}
	}
	return false
}

// The reason table must keep NVML's bit values.
func TestKnownReasonsMatchNVML(t *testing.T) {
	want := map[string]uint64{
		"gpu_idle":                    nvml.ClocksEventReasonGpuIdle,
		"applications_clocks_setting": nvml.ClocksEventReasonApplicationsClocksSetting,
		"sw_power_cap":                nvml.ClocksEventReasonSwPowerCap,
		"hw_slowdown":                 nvml.ClocksThrottleReasonHwSlowdown,
		"sync_boost":                  nvml.ClocksEventReasonSyncBoost,
		"sw_thermal_slowdown":         nvml.ClocksEventReasonSwThermalSlowdown,
		"hw_thermal_slowdown":         nvml.ClocksThrottleReasonHwThermalSlowdown,
		"hw_power_brake_slowdown":     nvml.ClocksThrottleReasonHwPowerBrakeSlowdown,
		"display_clocks_setting":      nvml.ClocksEventReasonDisplayClockSetting,
	}
	known := KnownReasons()
	if len(known) != len(want) {
		t.Fatalf("%d known reasons, want %d", len(known), len(want))
	}
	for _, k := range known {
		if want[k.Name] != k.Bit {
			t.Errorf("%s = %#x, NVML says %#x", k.Name, k.Bit, want[k.Name])
		}
	}
}
