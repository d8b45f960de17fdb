package testbody

import (
	"os"
	"path/filepath"
	"testing"
)

// Files reads every file matching glob, in the order filepath.Glob gives,
// for a fuzz target's seeds. It fails the test when nothing matches or a
// file cannot be read: a fuzz target without its seeds tests little.
func Files(tb testing.TB, glob string) [][]byte {
	tb.Helper()
	paths, err := filepath.Glob(glob)
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no seed files match %s: %v", glob, err)
	}
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}
