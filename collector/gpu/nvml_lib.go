//go:build cgo

package gpu

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// nvmlError converts an nvml.Return, keeping ErrNotSupported and
// ErrGPULost recognisable with errors.Is.
func nvmlError(call string, ret nvml.Return) error {
	switch ret {
	case nvml.SUCCESS:
		return nil
	case nvml.ERROR_NOT_SUPPORTED:
		return fmt.Errorf("%s: %w", call, ErrNotSupported)
	case nvml.ERROR_GPU_IS_LOST:
		return fmt.Errorf("%s: %w", call, ErrGPULost)
	}
	return fmt.Errorf("%s: %w", call, nvmlReturnError{ret})
}

// nvmlReturnError carries the code of an unexpected NVML failure.
type nvmlReturnError struct{ ret nvml.Return }

func (e nvmlReturnError) Error() string { return "nvml: " + e.ret.Error() }

// nvmlForwarder adapts any nvml.Interface: the real library, or go-nvml's
// mock servers in tests.
type nvmlForwarder struct {
	lib nvml.Interface
	// libName is what Init names when the library cannot be loaded.
	libName string
	// eventReasons is false on drivers older than 535, which only have
	// nvmlDeviceGetCurrentClocksThrottleReasons. Calling a symbol the
	// library lacks would abort the process, so it is looked up once.
	eventReasons bool
}

func newNVMLForwarder(lib nvml.Interface, libName string) *nvmlForwarder {
	return &nvmlForwarder{lib: lib, libName: libName}
}

func (f *nvmlForwarder) Init() error {
	ret := f.lib.Init()
	if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
		return fmt.Errorf("cannot load %s: %w (is the NVIDIA driver installed, and its libraries mounted into the container?)", f.libName, ErrLibraryNotFound)
	}
	if err := nvmlError("nvmlInit", ret); err != nil {
		return err
	}
	f.eventReasons = f.lib.Extensions().LookupSymbol("nvmlDeviceGetCurrentClocksEventReasons") == nil
	return nil
}

func (f *nvmlForwarder) Shutdown() error { return nvmlError("nvmlShutdown", f.lib.Shutdown()) }

func (f *nvmlForwarder) DeviceCount() (int, error) {
	n, ret := f.lib.DeviceGetCount()
	return n, nvmlError("nvmlDeviceGetCount", ret)
}

func (f *nvmlForwarder) Device(index int) (nvmlDevice, error) {
	d, ret := f.lib.DeviceGetHandleByIndex(index)
	if err := nvmlError("nvmlDeviceGetHandleByIndex", ret); err != nil {
		return nil, err
	}
	return nvmlHandle{d: d, eventReasons: f.eventReasons}, nil
}

type nvmlHandle struct {
	d            nvml.Device
	eventReasons bool
}

func (h nvmlHandle) UUID() (string, error) {
	s, ret := h.d.GetUUID()
	return s, nvmlError("nvmlDeviceGetUUID", ret)
}

func (h nvmlHandle) Name() (string, error) {
	s, ret := h.d.GetName()
	return s, nvmlError("nvmlDeviceGetName", ret)
}

func (h nvmlHandle) PowerMilliwatts() (uint32, error) {
	v, ret := h.d.GetPowerUsage()
	return v, nvmlError("nvmlDeviceGetPowerUsage", ret)
}

func (h nvmlHandle) EnforcedLimitMilliwatts() (uint32, error) {
	v, ret := h.d.GetEnforcedPowerLimit()
	return v, nvmlError("nvmlDeviceGetEnforcedPowerLimit", ret)
}

func (h nvmlHandle) DefaultLimitMilliwatts() (uint32, error) {
	v, ret := h.d.GetPowerManagementDefaultLimit()
	return v, nvmlError("nvmlDeviceGetPowerManagementDefaultLimit", ret)
}

func (h nvmlHandle) EnergyMillijoules() (uint64, error) {
	v, ret := h.d.GetTotalEnergyConsumption()
	return v, nvmlError("nvmlDeviceGetTotalEnergyConsumption", ret)
}

func (h nvmlHandle) SMClockMHz() (uint32, error) {
	v, ret := h.d.GetClockInfo(nvml.CLOCK_SM)
	return v, nvmlError("nvmlDeviceGetClockInfo(SM)", ret)
}

func (h nvmlHandle) MaxSMClockMHz() (uint32, error) {
	v, ret := h.d.GetMaxClockInfo(nvml.CLOCK_SM)
	return v, nvmlError("nvmlDeviceGetMaxClockInfo(SM)", ret)
}

func (h nvmlHandle) ClockEventReasons() (uint64, error) {
	if h.eventReasons {
		v, ret := h.d.GetCurrentClocksEventReasons()
		return v, nvmlError("nvmlDeviceGetCurrentClocksEventReasons", ret)
	}
	v, ret := h.d.GetCurrentClocksThrottleReasons()
	return v, nvmlError("nvmlDeviceGetCurrentClocksThrottleReasons", ret)
}

func (h nvmlHandle) UtilizationPercent() (uint32, error) {
	u, ret := h.d.GetUtilizationRates()
	return u.Gpu, nvmlError("nvmlDeviceGetUtilizationRates", ret)
}

func (h nvmlHandle) Memory() (used, total uint64, err error) {
	m, ret := h.d.GetMemoryInfo()
	return m.Used, m.Total, nvmlError("nvmlDeviceGetMemoryInfo", ret)
}

func (h nvmlHandle) ComputePIDs() ([]uint32, error) {
	procs, ret := h.d.GetComputeRunningProcesses()
	if err := nvmlError("nvmlDeviceGetComputeRunningProcesses", ret); err != nil {
		return nil, err
	}
	pids := make([]uint32, len(procs))
	for i, p := range procs {
		pids[i] = p.Pid
	}
	return pids, nil
}

// MIGDeviceUUIDs lists the MIG devices of a GPU in MIG mode; none when MIG
// is off or unsupported.
func (h nvmlHandle) MIGDeviceUUIDs() ([]string, error) {
	current, _, ret := h.d.GetMigMode()
	if err := nvmlError("nvmlDeviceGetMigMode", ret); err != nil {
		if errors.Is(err, ErrNotSupported) {
			return nil, nil
		}
		return nil, err
	}
	if current != nvml.DEVICE_MIG_ENABLE {
		return nil, nil
	}
	n, ret := h.d.GetMaxMigDeviceCount()
	if err := nvmlError("nvmlDeviceGetMaxMigDeviceCount", ret); err != nil {
		return nil, err
	}
	var out []string
	for i := range n {
		mig, ret := h.d.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // an empty slot
		}
		if err := nvmlError("nvmlDeviceGetMigDeviceHandleByIndex", ret); err != nil {
			return out, err
		}
		uuid, ret := mig.GetUUID()
		if err := nvmlError("nvmlDeviceGetUUID(MIG)", ret); err != nil {
			return out, err
		}
		out = append(out, uuid)
	}
	return out, nil
}

// NewNVML loads libnvidia-ml and initialises it. Without the library it
// fails with an error that wraps ErrLibraryNotFound.
func NewNVML(opts NVMLOptions) (*NVML, error) {
	name := "libnvidia-ml.so.1"
	var libOpts []nvml.LibraryOption
	if opts.LibraryPath != "" {
		name = opts.LibraryPath
		libOpts = append(libOpts, nvml.WithLibraryPath(opts.LibraryPath))
	}
	return newNVMLWithLib(newNVMLForwarder(nvml.New(libOpts...), name))
}
