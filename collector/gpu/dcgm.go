package gpu

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DCGM field ids the backend reads (dcgm_fields.h; the test checks them
// against go-dcgm's constants).
const (
	dcgmFieldName          uint16 = 50  // DCGM_FI_DEV_GPU_NAME, string
	dcgmFieldUUID          uint16 = 54  // DCGM_FI_DEV_GPU_UUID, string
	dcgmFieldSMClock       uint16 = 100 // DCGM_FI_DEV_SM_CLOCK, MHz
	dcgmFieldClockEvents   uint16 = 112 // DCGM_FI_DEV_CLOCKS_EVENT_REASONS, bitmask
	dcgmFieldMaxSMClock    uint16 = 113 // DCGM_FI_DEV_MAX_SM_CLOCK, MHz
	dcgmFieldPower         uint16 = 155 // DCGM_FI_DEV_POWER_USAGE, W
	dcgmFieldEnergy        uint16 = 156 // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ
	dcgmFieldDefaultLimit  uint16 = 163 // DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF, W
	dcgmFieldEnforcedLimit uint16 = 164 // DCGM_FI_DEV_ENFORCED_POWER_LIMIT, W
	dcgmFieldGPUUtil       uint16 = 203 // DCGM_FI_DEV_GPU_UTIL, %
	dcgmFieldFBTotal       uint16 = 250 // DCGM_FI_DEV_FB_TOTAL, MiB
	dcgmFieldFBUsed        uint16 = 252 // DCGM_FI_DEV_FB_USED, MiB
)

// dcgmFields is the watched field group, in the order Latest answers.
func dcgmFields() []uint16 {
	return []uint16{
		dcgmFieldName, dcgmFieldUUID, dcgmFieldSMClock, dcgmFieldClockEvents, dcgmFieldMaxSMClock,
		dcgmFieldPower, dcgmFieldEnergy, dcgmFieldEnforcedLimit, dcgmFieldDefaultLimit, dcgmFieldGPUUtil, dcgmFieldFBTotal, dcgmFieldFBUsed,
	}
}

// dcgmReading is one field value. Err is ErrNotSupported for a blank or
// unsupported value and wraps ErrGPULost for a lost GPU.
type dcgmReading struct {
	Int   int64
	Float float64
	Str   string
	Err   error
}

// dcgmLib is the part of DCGM the backend uses.
type dcgmLib interface {
	Connect() error
	Disconnect() error
	GPUs() ([]uint, error)
	Watch(gpus []uint, fields []uint16, every time.Duration) error
	// Latest answers one reading per field, in the order asked.
	Latest(gpu uint, fields []uint16) ([]dcgmReading, error)
}

// DCGMOptions configures the DCGM backend.
type DCGMOptions struct {
	// Address of a running nv-hostengine: host:port, or a unix socket
	// path (unix:///run/dcgm.sock or /run/dcgm.sock). Empty: DCGM runs
	// embedded in this process.
	Address string
	// UpdateEvery is how often DCGM samples the fields (default 1s).
	UpdateEvery time.Duration
}

// DCGM reads GPUs through NVIDIA's Data Center GPU Manager.
type DCGM struct {
	lib    dcgmLib
	gpus   []uint
	fields []uint16
}

// newDCGMWithLib connects lib, finds the GPUs and starts watching fields.
func newDCGMWithLib(lib dcgmLib, opts DCGMOptions) (*DCGM, error) {
	if opts.UpdateEvery <= 0 {
		opts.UpdateEvery = time.Second
	}
	if err := lib.Connect(); err != nil {
		return nil, fmt.Errorf("dcgm: %w", err)
	}
	fields := dcgmFields()
	gpus, err := lib.GPUs()
	if err == nil {
		err = lib.Watch(gpus, fields, opts.UpdateEvery)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("dcgm: %w", err), lib.Disconnect())
	}
	return &DCGM{lib: lib, gpus: gpus, fields: fields}, nil
}

// Name implements Backend.
func (b *DCGM) Name() string { return "dcgm" }

// Close disconnects from DCGM.
func (b *DCGM) Close() error {
	if err := b.lib.Disconnect(); err != nil {
		return fmt.Errorf("dcgm: %w", err)
	}
	return nil
}

// Collect implements Backend. Compute PIDs are not read through DCGM;
// process attribution needs the NVML backend.
func (b *DCGM) Collect(ctx context.Context) ([]Device, error) {
	out := make([]Device, 0, len(b.gpus))
	for _, id := range b.gpus {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("dcgm: %w", err)
		}
		out = append(out, b.readDevice(id))
	}
	return out, nil
}

func (b *DCGM) readDevice(id uint) Device {
	d := Device{Index: int(id)}
	vals, err := b.lib.Latest(id, b.fields)
	if err != nil {
		d.Err = err
		return d
	}
	if len(vals) != len(b.fields) {
		d.Err = fmt.Errorf("dcgm: %d values for %d fields", len(vals), len(b.fields))
		return d
	}
	var de deviceErrors
	for i, f := range b.fields {
		v := vals[i]
		if !de.add(v.Err) {
			break
		}
		if v.Err != nil {
			continue
		}
		switch f {
		case dcgmFieldName:
			d.Name = v.Str
		case dcgmFieldUUID:
			d.UUID = v.Str
		case dcgmFieldSMClock:
			d.SMClockHz = Some(float64(v.Int) * 1e6)
		case dcgmFieldMaxSMClock:
			d.SMClockMaxHz = Some(float64(v.Int) * 1e6)
		case dcgmFieldClockEvents:
			d.Throttle = Reasons{Mask: uint64(v.Int), OK: true}
		case dcgmFieldPower:
			d.PowerW = Some(v.Float)
		case dcgmFieldEnergy:
			d.EnergyJ = Some(float64(v.Int) / 1e3)
		case dcgmFieldEnforcedLimit:
			d.PowerLimitW = Some(v.Float)
		case dcgmFieldDefaultLimit:
			d.PowerLimitDefaultW = Some(v.Float)
		case dcgmFieldGPUUtil:
			d.Utilization = Some(float64(v.Int) / 100)
		case dcgmFieldFBTotal:
			d.MemTotalB = Some(float64(v.Int) * mib)
		case dcgmFieldFBUsed:
			d.MemUsedB = Some(float64(v.Int) * mib)
		}
	}
	d.Err = de.err()
	return d
}

// mib is DCGM's "MB": a mebibyte.
const mib = 1 << 20
