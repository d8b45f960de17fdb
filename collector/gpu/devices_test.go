package gpu

import (
	"context"
	"testing"
	"time"
)

// Each target gets the readings of the GPUs it holds: chat GPU 0 (by
// configuration), code-a and code-b the shared GPU 1 (by their pods);
// GPU 2 is nobody's. An unknown target gets nothing.
func TestTargetDevices(t *testing.T) {
	fake := &fakeBackend{name: "nvml"}
	m := NewManager(ManagerOptions{Backend: fake})
	if got := m.TargetDevices("chat"); got != nil {
		t.Fatalf("before any collection: %v", got)
	}
	fake.set(cycle1(), nil)
	if _, err := m.Collect(context.Background(), time.Unix(1_700_000_000, 0), targets()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		want   []string
	}{{"chat", []string{"GPU-a"}}, {"code-a", []string{"GPU-b"}}, {"code-b", []string{"GPU-b"}}, {"nobody", nil}} {
		got := m.TargetDevices(tc.target)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d devices, want %v", tc.target, len(got), tc.want)
			continue
		}
		for i := range got {
			if got[i].UUID != tc.want[i] {
				t.Errorf("%s: %s, want %s", tc.target, got[i].UUID, tc.want[i])
			}
		}
	}
	if d := m.TargetDevices("chat"); !d[0].Throttle.OK || d[0].Throttle.Mask != 0x4 || d[0].SMClockHz.V != 1.98e9 {
		t.Errorf("chat's reading: %+v", d[0])
	}
}
