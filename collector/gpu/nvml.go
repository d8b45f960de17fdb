package gpu

import (
	"context"
	"errors"
	"fmt"
)

// nvmlLib is the part of NVML the backend uses. Every nvml.Return is turned
// into an error here, so the backend never sees NVML types.
type nvmlLib interface {
	Init() error
	Shutdown() error
	DeviceCount() (int, error)
	Device(index int) (nvmlDevice, error)
}

// nvmlDevice is one GPU handle, in NVML's own units.
type nvmlDevice interface {
	UUID() (string, error)
	Name() (string, error)
	PowerMilliwatts() (uint32, error)
	EnforcedLimitMilliwatts() (uint32, error)
	DefaultLimitMilliwatts() (uint32, error)
	EnergyMillijoules() (uint64, error)
	SMClockMHz() (uint32, error)
	MaxSMClockMHz() (uint32, error)
	ClockEventReasons() (uint64, error)
	UtilizationPercent() (uint32, error)
	Memory() (used, total uint64, err error)
	ComputePIDs() ([]uint32, error)
	MIGDeviceUUIDs() ([]string, error)
}

// NVMLOptions configures the NVML backend.
type NVMLOptions struct {
	// LibraryPath overrides where libnvidia-ml.so.1 is loaded from, e.g.
	// /run/nvidia/driver/usr/lib64/libnvidia-ml.so.1 under the GPU Operator's
	// driver container. Empty: the dynamic loader's search path.
	LibraryPath string
}

// NVML reads GPUs through the NVIDIA Management Library.
type NVML struct {
	lib nvmlLib
}

// newNVMLWithLib initialises lib and returns a backend reading through it.
func newNVMLWithLib(lib nvmlLib) (*NVML, error) {
	if err := lib.Init(); err != nil {
		return nil, fmt.Errorf("nvml: %w", err)
	}
	return &NVML{lib: lib}, nil
}

// Name implements Backend.
func (b *NVML) Name() string { return "nvml" }

// Close shuts NVML down.
func (b *NVML) Close() error {
	if err := b.lib.Shutdown(); err != nil {
		return fmt.Errorf("nvml: %w", err)
	}
	return nil
}

// Collect implements Backend. NVML calls cannot be cancelled; the context
// is checked between GPUs.
func (b *NVML) Collect(ctx context.Context) ([]Device, error) {
	n, err := b.lib.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("nvml: %w", err)
	}
	out := make([]Device, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("nvml: after %d of %d GPUs: %w", i, n, err)
		}
		out = append(out, b.readDevice(i))
	}
	return out, nil
}

// deviceErrors gathers the failed calls of one GPU. A reading the GPU does
// not support is absence, not an error.
type deviceErrors struct {
	errs []error
	lost bool
}

// add records err and reports whether the GPU can still be read.
func (e *deviceErrors) add(err error) bool {
	if err == nil || errors.Is(err, ErrNotSupported) {
		return !e.lost
	}
	e.errs = append(e.errs, err)
	if errors.Is(err, ErrGPULost) {
		e.lost = true
	}
	return !e.lost
}

func (e *deviceErrors) err() error { return errors.Join(e.errs...) }

func (b *NVML) readDevice(i int) Device {
	d := Device{Index: i}
	h, err := b.lib.Device(i)
	if err != nil {
		d.Err = err
		return d
	}
	// Each reading stops at a lost GPU; any other failure leaves that
	// one reading absent and goes on with the rest.
	steps := []func() error{
		func() (err error) { d.UUID, err = h.UUID(); return },
		func() (err error) { d.Name, err = h.Name(); return },
		func() error { return into[uint32](&d.PowerW, 1, 1e3)(h.PowerMilliwatts()) },
		func() error { return into[uint32](&d.PowerLimitW, 1, 1e3)(h.EnforcedLimitMilliwatts()) },
		func() error { return into[uint32](&d.PowerLimitDefaultW, 1, 1e3)(h.DefaultLimitMilliwatts()) },
		func() error { return into[uint64](&d.EnergyJ, 1, 1e3)(h.EnergyMillijoules()) },
		func() error { return into[uint32](&d.SMClockHz, 1e6, 1)(h.SMClockMHz()) },
		func() error { return into[uint32](&d.SMClockMaxHz, 1e6, 1)(h.MaxSMClockMHz()) },
		func() error { return into[uint32](&d.Utilization, 1, 100)(h.UtilizationPercent()) },
		func() error {
			v, err := h.ClockEventReasons()
			if err == nil {
				d.Throttle = Reasons{Mask: v, OK: true}
			}
			return err
		},
		func() error {
			used, total, err := h.Memory()
			if err == nil {
				d.MemUsedB, d.MemTotalB = Some(float64(used)), Some(float64(total))
			}
			return err
		},
		func() error {
			pids, err := h.ComputePIDs()
			if err == nil {
				d.PIDs, d.PIDsOK = make([]int, len(pids)), true
				for j, p := range pids {
					d.PIDs[j] = int(p)
				}
			}
			return err
		},
		func() (err error) { d.MIGUUIDs, err = h.MIGDeviceUUIDs(); return },
	}
	var de deviceErrors
	for _, step := range steps {
		if !de.add(step()) {
			break
		}
	}
	d.Err = de.err()
	return d
}

// into returns a function that stores v*mul/div in dst when err is nil,
// and passes err on. Dividing keeps mW to W exact for whole watts.
func into[T uint32 | uint64](dst *Value, mul, div float64) func(T, error) error {
	return func(v T, err error) error {
		if err == nil {
			*dst = Some(float64(v) * mul / div)
		}
		return err
	}
}
