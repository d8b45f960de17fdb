package gpu

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakeDCGM answers like a DCGM host engine watching two H100s. GPU 1 has
// no energy counter; GPUs listed in lost fail as lost.
type fakeDCGM struct {
	connectErr error
	watched    []uint16
	every      time.Duration
	lost       map[uint]bool
	closed     bool
}

func (f *fakeDCGM) Connect() error        { return f.connectErr }
func (f *fakeDCGM) Disconnect() error     { f.closed = true; return nil }
func (f *fakeDCGM) GPUs() ([]uint, error) { return []uint{0, 1, 2}, nil }

func (f *fakeDCGM) Watch(gpus []uint, fields []uint16, every time.Duration) error {
	f.watched, f.every = fields, every
	return nil
}

func (f *fakeDCGM) Latest(gpu uint, fields []uint16) ([]dcgmReading, error) {
	if f.lost[gpu] {
		return nil, fmt.Errorf("read fields: %w", ErrGPULost)
	}
	out := make([]dcgmReading, len(fields))
	for i, fid := range fields {
		r := &out[i]
		switch fid {
		case dcgmFieldName:
			r.Str = "NVIDIA H100 80GB HBM3"
		case dcgmFieldUUID:
			r.Str = fmt.Sprintf("GPU-%d", gpu)
		case dcgmFieldSMClock:
			r.Int = 1980
		case dcgmFieldMaxSMClock:
			r.Int = 1980
		case dcgmFieldClockEvents:
			r.Int = 0x4
		case dcgmFieldPower:
			r.Float = 612.437
		case dcgmFieldEnergy:
			r.Int = 389215774021
			if gpu == 1 {
				r.Err = fmt.Errorf("field 156 blank: %w", ErrNotSupported)
			}
		case dcgmFieldEnforcedLimit:
			r.Float = 700
		case dcgmFieldDefaultLimit:
			r.Float = 700
		case dcgmFieldGPUUtil:
			r.Int = 87
		case dcgmFieldFBTotal:
			r.Int = 81559
		case dcgmFieldFBUsed:
			r.Int = 76475
		}
	}
	return out, nil
}

func TestDCGMReadsEveryField(t *testing.T) {
	fake := &fakeDCGM{lost: map[uint]bool{2: true}}
	b, err := newDCGMWithLib(fake, DCGMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fake.every != time.Second || len(fake.watched) != 12 {
		t.Errorf("watched %d fields every %v, want 12 every 1s", len(fake.watched), fake.every)
	}
	devs, err := b.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("%d devices, want 3", len(devs))
	}
	got := render(devs[:1])
	want := "gpu=0 uuid=GPU-0 name=\"NVIDIA H100 80GB HBM3\" power_w=612.437 limit_w=700 energy_j=3.89215774021e+08 " +
		"sm_hz=1.98e+09 sm_max_hz=1.98e+09 throttle=sw_power_cap util=0.87 mem_used_b=8.01898496e+10 mem_total_b=8.5520809984e+10 pids=absent\n"
	if got != want {
		t.Errorf("GPU 0:\n got %s\nwant %s", got, want)
	}
	if d := devs[0].PowerLimitDefaultW; !d.OK || d.V != 700 {
		t.Errorf("GPU 0: default power limit %v, want 700 (field 163)", d)
	}
	if devs[1].EnergyJ.OK || devs[1].Err != nil || !devs[1].PowerW.OK {
		t.Errorf("GPU 1: energy %v err %v power %v; want energy absent and no error", devs[1].EnergyJ, devs[1].Err, devs[1].PowerW)
	}
	if !errors.Is(devs[2].Err, ErrGPULost) || devs[2].Index != 2 {
		t.Errorf("GPU 2: %+v, want lost", devs[2])
	}
	if err := b.Close(); err != nil || !fake.closed {
		t.Errorf("close: %v, closed %v", err, fake.closed)
	}
}

func TestDCGMConnectFailure(t *testing.T) {
	_, err := newDCGMWithLib(&fakeDCGM{connectErr: ErrLibraryNotFound}, DCGMOptions{})
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Errorf("err = %v, want ErrLibraryNotFound", err)
	}
}
