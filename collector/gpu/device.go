package gpu

import (
	"context"
	"errors"
	"strconv"
)

// Backend is one source of GPU readings.
type Backend interface {
	// Name is the backend's label value: nvml, dcgm or dcgm-exporter.
	Name() string
	// Collect reads every GPU once. A GPU that fails is reported with its
	// Err set while the others are read as usual; an error return means
	// the backend as a whole could not answer.
	Collect(ctx context.Context) ([]Device, error)
	// Close releases the library or connection.
	Close() error
}

// ErrNotSupported marks a reading this GPU or driver does not provide (for
// example the energy counter before Volta). Such a reading stays absent.
var ErrNotSupported = errors.New("not supported by this GPU or driver")

// ErrGPULost marks a GPU that stopped answering (fell off the bus, Xid 79).
var ErrGPULost = errors.New("GPU is lost")

// ErrLibraryNotFound marks a backend whose shared library is not installed
// or not mounted into the container.
var ErrLibraryNotFound = errors.New("library not found")

// Value is a reading that may be absent.
type Value struct {
	V  float64
	OK bool
}

// Some returns a present Value.
func Some(v float64) Value { return Value{V: v, OK: true} }

// String renders the value, or "absent".
func (v Value) String() string {
	if !v.OK {
		return "absent"
	}
	return strconv.FormatFloat(v.V, 'g', -1, 64)
}

// PodRef is a pod the backend itself says uses the GPU (dcgm-exporter's
// Kubernetes mapper), kept as evidence for attribution.
type PodRef struct {
	Namespace string
	Pod       string
	Container string
	// MIGInstance is the GPU instance id the pod holds, empty for a whole GPU.
	MIGInstance string
}

// Device is one reading of one physical GPU.
type Device struct {
	Index int
	UUID  string
	Name  string

	PowerW      Value // board power draw
	PowerLimitW Value // enforced power limit
	// PowerLimitDefaultW is the board's default power limit: an enforced
	// limit under it is a cap someone set. Absent where the backend does
	// not read it (dcgm-exporter's default counters).
	PowerLimitDefaultW Value
	// EnergyJ is the GPU's cumulative energy counter since driver load.
	// Absent where the hardware has none; never zero for "unknown".
	EnergyJ      Value
	SMClockHz    Value
	SMClockMaxHz Value
	Throttle     Reasons
	Utilization  Value // 0..1
	MemUsedB     Value
	MemTotalB    Value

	// PIDs are the compute processes on the GPU, as the host sees them.
	// PIDsOK is false when the backend cannot list them.
	PIDs   []int
	PIDsOK bool
	// MIGUUIDs are the UUIDs of the MIG devices carved from this GPU.
	MIGUUIDs []string
	// Pods are the pods the backend reports on this GPU.
	Pods []PodRef

	// Err is set when a call for this GPU failed. The readings that did
	// succeed are still filled in. errors.Is(Err, ErrGPULost) for a lost GPU.
	Err error
}

// Key identifies the GPU across collections: its UUID, else its index.
func (d *Device) Key() string {
	if d.UUID != "" {
		return d.UUID
	}
	return "index:" + strconv.Itoa(d.Index)
}
