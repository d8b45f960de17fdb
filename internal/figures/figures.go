// Package figures knows what a figure of docs/benchmarks.md measures and
// whether it was measured before a change to that: `make figures`
// (test/figures) writes the table, internal/docscheck checks it.
package figures

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// MeasuringEnv is set in the environment of the test suite that make
// figures runs to time it: the staleness check stands aside there, since
// the figures it checks are the ones being measured again.
const MeasuringEnv = "GOODPUT_FIGURES_MEASURING"

// Paths are the files a figure measures, relative to the module's root:
// the directories of the roots' packages (say "./collector") and of what
// they import within this module, tests included, and go.mod and go.sum.
func Paths(roots []string) ([]string, error) {
	top, err := Output("go", "list", "-m", "-f", "{{.Dir}}")
	if err != nil {
		return nil, err
	}
	top = strings.TrimSpace(top) + string(os.PathSeparator)
	out, err := Output("go", append([]string{"list", "-deps", "-test", "-f", "{{if not .Standard}}{{.Dir}}{{end}}"}, roots...)...)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var paths []string
	for _, d := range strings.Split(out, "\n") {
		rel, ok := strings.CutPrefix(d, top)
		if !ok || seen[rel] {
			continue
		}
		seen[rel] = true
		paths = append(paths, rel)
	}
	slices.Sort(paths)
	return append([]string{"go.mod", "go.sum"}, paths...), nil
}

// ErrNoHistory: git, or the commit a figure was measured at, is not
// there (no git, a shallow clone, an archive).
var ErrNoHistory = errors.New("the repository's history is not available")

// Changes lists the commits after commit (not reachable from it) that
// changed one of paths, one line each ("hash subject"), in the git
// repository of the current directory.
func Changes(commit string, paths []string) ([]string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoHistory, err)
	}
	if _, err := Output("git", "cat-file", "-e", commit+"^{commit}"); err != nil {
		shallow, _ := Output("git", "rev-parse", "--is-shallow-repository")
		if strings.TrimSpace(shallow) == "true" {
			return nil, fmt.Errorf("%w: a shallow clone without commit %s", ErrNoHistory, commit)
		}
		if _, err2 := Output("git", "rev-parse", "--git-dir"); err2 != nil {
			return nil, fmt.Errorf("%w: not a git repository", ErrNoHistory)
		}
		return nil, fmt.Errorf("commit %s is not in this repository: %v", commit, err)
	}
	out, err := Output("git", append([]string{"log", "--format=%h %s", commit + "..HEAD", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// Output runs a command and returns its standard output.
func Output(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}
