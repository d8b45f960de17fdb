package figures

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Changes finds a commit that changed a measured path after the commit a
// figure was measured at, and nothing when only other paths changed.
func TestChangesCatchesAChangeAfterTheMeasurement(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git:", err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	git := func(args ...string) string {
		t.Helper()
		out, err := Output("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	write := func(name, text string) {
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q")
	write("collector/parse.go", "package collector\n")
	write("docs/benchmarks.md", "figures\n")
	git("add", ".")
	git("commit", "-qm", "measured here")
	measured := git("rev-parse", "HEAD")
	write("docs/benchmarks.md", "figures, written\n")
	git("commit", "-qam", "the table")
	if got, err := Changes(measured, []string{"collector"}); err != nil || len(got) != 0 {
		t.Fatalf("a docs-only commit: %v, %v; want no change", got, err)
	}
	write("collector/parse.go", "package collector // faster\n")
	git("commit", "-qam", "collector: a change not measured")
	got, err := Changes(measured, []string{"go.mod", "collector"})
	if err != nil || len(got) != 1 || !strings.HasSuffix(got[0], "collector: a change not measured") {
		t.Fatalf("got %q, %v; want the collector commit", got, err)
	}
	if _, err := Changes("0123456789abcdef0123456789abcdef01234567", []string{"collector"}); err == nil || errors.Is(err, ErrNoHistory) {
		t.Errorf("an unknown commit in a full clone: %v, want an error that is not ErrNoHistory", err)
	}
	t.Chdir(t.TempDir())
	if _, err := Changes(measured, []string{"collector"}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("outside a repository: %v, want ErrNoHistory", err)
	}
}

// This module's parser figures measure the collector and the command
// that computes them, and not, say, the exporter.
func TestPathsOfTheParseFigures(t *testing.T) {
	t.Chdir("../..")
	paths, err := Paths([]string{"./collector", "./test/figures"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"go.mod", "collector", "snapshot", "internal/testbody", "test/figures", "internal/figures"} {
		if !slices.Contains(paths, want) {
			t.Errorf("%q not among %q", want, paths)
		}
	}
	if slices.Contains(paths, "exporter") {
		t.Errorf("exporter among %q", paths)
	}
}
