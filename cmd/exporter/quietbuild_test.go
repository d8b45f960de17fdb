package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// makeCgoCFlags is the CGO_CFLAGS the Makefile builds with.
func makeCgoCFlags(t *testing.T) string {
	t.Helper()
	f, err := os.Open("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CGO_CFLAGS ?="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("the Makefile sets no CGO_CFLAGS")
	return ""
}

// The build is quiet: compiled with the Makefile's CGO_CFLAGS, the NVML
// bindings' cgo wrappers print nothing, where Go's default flags print the
// deprecation warnings the README describes. A flag defined for this run
// only makes the go command compile the cgo packages afresh instead of
// taking them from its cache.
func TestBuildWithTheMakefilesFlagsIsQuiet(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the NVML bindings twice")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	build := func(cflags string) string {
		t.Helper()
		cmd := exec.Command(goCmd, "build", "-o", os.DevNull, "github.com/NVIDIA/go-nvml/pkg/nvml")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1",
			fmt.Sprintf("CGO_CFLAGS=%s -DGOODPUT_BUILD_CHECK=%d", cflags, time.Now().UnixNano()))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go build with CGO_CFLAGS=%q: %v\n%s", cflags, err, out)
		}
		return string(out)
	}
	loud := build("-O2 -g") // go's default
	n := strings.Count(loud, "[-Wdeprecated-declarations]")
	if n == 0 {
		t.Fatalf("the default flags print no deprecation warning; the README's note is out of date:\n%s", loud)
	}
	t.Logf("Go's default CGO_CFLAGS: %d deprecation warnings, %d lines", n, strings.Count(loud, "\n"))
	if out := build(makeCgoCFlags(t)); out != "" {
		t.Errorf("the Makefile's CGO_CFLAGS still print:\n%s", out)
	}
}
