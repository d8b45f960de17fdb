//go:build cgo

package gpu

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-dcgm/pkg/dcgm"
)

// On a machine without DCGM, NewDCGM must fail at connect time with an
// error that says which library is missing and what to do instead.
func TestNewDCGMWithoutLibrary(t *testing.T) {
	if dcgmPresent() {
		t.Skip("libdcgm.so.4 is installed here")
	}
	b, err := NewDCGM(DCGMOptions{})
	if err == nil {
		_ = b.Close()
		t.Fatal("NewDCGM succeeded without libdcgm")
	}
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Errorf("err = %v, want it to wrap ErrLibraryNotFound", err)
	}
	for _, want := range []string{"dcgm: cannot load libdcgm.so.4", "--gpu.backend=nvml or dcgm-exporter"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %q, want it to say %q", err, want)
		}
	}
	// A remote host engine needs the client library just the same.
	if _, err := NewDCGM(DCGMOptions{Address: "localhost:5555"}); !errors.Is(err, ErrLibraryNotFound) {
		t.Errorf("standalone: err = %v, want ErrLibraryNotFound", err)
	}
}

func dcgmPresent() bool {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/lib/aarch64-linux-gnu", "/usr/local/dcgm/lib64"} {
		if _, err := os.Stat(filepath.Join(dir, dcgmLibName)); err == nil {
			return true
		}
	}
	return false
}

func TestDCGMFieldIDs(t *testing.T) {
	for _, c := range []struct {
		ours   uint16
		theirs dcgm.Short
	}{
		{dcgmFieldName, dcgm.DCGM_FI_DEV_NAME},
		{dcgmFieldUUID, dcgm.DCGM_FI_DEV_UUID},
		{dcgmFieldSMClock, dcgm.DCGM_FI_DEV_SM_CLOCK},
		{dcgmFieldClockEvents, dcgm.DCGM_FI_DEV_CLOCKS_EVENT_REASONS},
		{dcgmFieldMaxSMClock, dcgm.DCGM_FI_DEV_MAX_SM_CLOCK},
		{dcgmFieldPower, dcgm.DCGM_FI_DEV_POWER_USAGE},
		{dcgmFieldEnergy, dcgm.DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
		{dcgmFieldEnforcedLimit, dcgm.DCGM_FI_DEV_ENFORCED_POWER_LIMIT},
		{dcgmFieldDefaultLimit, dcgm.DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF},
		{dcgmFieldGPUUtil, dcgm.DCGM_FI_DEV_GPU_UTIL},
		{dcgmFieldFBTotal, dcgm.DCGM_FI_DEV_FB_TOTAL},
		{dcgmFieldFBUsed, dcgm.DCGM_FI_DEV_FB_USED},
	} {
		if c.ours != uint16(c.theirs) {
			t.Errorf("field id %d, go-dcgm says %d", c.ours, c.theirs)
		}
	}
}

func TestDCGMAddress(t *testing.T) {
	for in, want := range map[string][2]string{
		"localhost:5555":         {"localhost:5555", "0"},
		"tcp://10.0.0.1:5555":    {"10.0.0.1:5555", "0"},
		"unix:///run/dcgm.sock":  {"/run/dcgm.sock", "1"},
		"/var/run/nv-hostengine": {"/var/run/nv-hostengine", "1"},
	} {
		a, u := dcgmAddress(in)
		if a != want[0] || u != want[1] {
			t.Errorf("dcgmAddress(%q) = %q, %q; want %q, %q", in, a, u, want[0], want[1])
		}
	}
}
