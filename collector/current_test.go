package collector

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goodput-exporter/goodput-exporter/snapshot"
)

// Current is Support less what an engine removed: llama.cpp's KV gauge
// (gone since PR #13660, absent from the b11669 captures) is supported
// for older builds but not current; nothing else is removed, and Current
// never claims what Support does not.
func TestCurrentLeavesOutRemovedFamilies(t *testing.T) {
	for _, e := range snapshot.Engines {
		sup, cur := Support(e), Current(e)
		for name, ok := range cur {
			if ok && !sup[name] {
				t.Errorf("%s: %s current but not supported", e, name)
			}
			want := sup[name]
			if e == snapshot.LlamaCPP && name == "llm_kv_cache_usage_ratio" {
				want = false
			}
			if ok != want {
				t.Errorf("%s: Current[%s] = %v, want %v", e, name, ok, want)
			}
		}
	}
	if !Support(snapshot.LlamaCPP)["llm_kv_cache_usage_ratio"] {
		t.Error("llama.cpp's KV gauge is still read from older builds: Support must keep it")
	}
	// The real b11669 captures have no KV family, as Current says.
	paths, _ := filepath.Glob("testdata/fixtures/llamacpp/llamacpp-b11669-*.prom")
	if len(paths) < 5 {
		t.Fatalf("b11669 captures: %v", paths)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "kv_cache_usage") {
			t.Errorf("%s has a KV-cache family", p)
		}
	}
}
