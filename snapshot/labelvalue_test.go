package snapshot

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCapLabelValue(t *testing.T) {
	for _, v := range []string{"", "meta-llama/Llama-3.1-8B-Instruct", strings.Repeat("a", MaxLabelValue)} {
		if got, cut := CapLabelValue(v); got != v || cut {
			t.Errorf("%d bytes: changed to %d bytes (%v)", len(v), len(got), cut)
		}
	}
	long := strings.Repeat("m", 256<<10)
	got, cut := CapLabelValue(long)
	// 493 bytes of the name, "…" (3 bytes), 16 hex digits of
	// sha256("m" × 262144), worked out with sha256sum.
	want := strings.Repeat("m", 493) + "…" + "1cc327a15a79fa6b"
	if !cut || got != want {
		t.Errorf("256 KiB name: %q…%q (%d bytes), want %q", got[:10], got[480:], len(got), want[480:])
	}
	// Names that differ only past the cut stay apart.
	other, _ := CapLabelValue(long[:len(long)-1] + "n")
	if other == got || len(other) != MaxLabelValue {
		t.Errorf("two names with the same first 493 bytes: %q and %q", got[480:], other[480:])
	}
	// A multi-byte character across the cut is not split.
	wide := strings.Repeat("a", 492) + strings.Repeat("日", 300)
	w, _ := CapLabelValue(wide)
	if !utf8.ValidString(w) || len(w) > MaxLabelValue || !strings.HasPrefix(w, strings.Repeat("a", 492)+"…") {
		t.Errorf("cut inside a character: %q", w[480:])
	}
}
