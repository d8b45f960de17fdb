package docscheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GoldenExpositions are the daemon's pinned expositions, as globs from
// the repository root: whatever a rule or panel reads, and whatever the
// docs list, must be in one of them (or be declared by the test that
// reads them). mixin/testdata/demo-failure-modes.prom is the failure-mode
// families of the daemon's /metrics under `goodput-exporter demo` (its
// header says how it was taken): the classifier's llm_signal_* gauges
// appear only once a window has been judged, which no other golden
// exposition reaches.
var GoldenExpositions = []string{
	"cmd/exporter/testdata/e2e-output.prom",
	"exporter/testdata/window/golden.prom",
	"collector/testdata/golden/*/*.prom",
	"mixin/testdata/demo-failure-modes.prom",
}

// Golden is what the pinned expositions hold: each family's TYPE, and
// each sample's series name with the file it was read from.
type Golden struct {
	Types, Samples map[string]string
}

// ReadGolden reads GoldenExpositions under root. A glob that matches no
// file is an error: a golden exposition that moved would otherwise check
// nothing.
func ReadGolden(root string) (Golden, error) {
	g := Golden{Types: map[string]string{}, Samples: map[string]string{}}
	for _, glob := range GoldenExpositions {
		paths, _ := filepath.Glob(filepath.Join(root, glob))
		if len(paths) == 0 {
			return g, fmt.Errorf("no golden exposition %s under %s", glob, root)
		}
		for _, p := range paths {
			if err := g.read(p); err != nil {
				return g, err
			}
		}
	}
	return g, nil
}

func (g Golden) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case line[0] == '#':
			if f := strings.Fields(line); len(f) == 4 && f[1] == "TYPE" {
				g.Types[f[2]] = f[3]
			}
		default:
			g.Samples[line[:strings.IndexAny(line+" ", "{ ")]] = path
		}
	}
	return sc.Err()
}
