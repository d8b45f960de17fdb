package chromium

import (
	"fmt"
	"strings"
	"testing"
)

// stopTB records how a helper ended the test instead of ending it.
type stopTB struct {
	testing.TB
	how string
}

type stopped struct{}

func (s *stopTB) Helper()                      {}
func (s *stopTB) Fatal(args ...any)            { s.how = "fatal: " + fmt.Sprint(args...); panic(stopped{}) }
func (s *stopTB) Skip(args ...any)             { s.how = "skip: " + fmt.Sprint(args...); panic(stopped{}) }
func (s *stopTB) Fatalf(f string, args ...any) { s.Fatal(fmt.Sprintf(f, args...)) }

func pathWith(t *testing.T) string {
	s := &stopTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != (stopped{}) {
				panic(r)
			}
		}()
		Path(s)
	}()
	return s.how
}

// Without a browser the test skips, saying how to install one; with
// GOODPUT_REQUIRE_CHROMIUM set (CI) it fails instead.
func TestPathWithoutBrowser(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOODPUT_REQUIRE_CHROMIUM", "")
	if how := pathWith(t); !strings.HasPrefix(how, "skip: ") || !strings.Contains(how, "apt-get install --no-install-recommends chromium") {
		t.Errorf("without chromium: %q, want a skip naming the package", how)
	}
	t.Setenv("GOODPUT_REQUIRE_CHROMIUM", "1")
	if how := pathWith(t); !strings.HasPrefix(how, "fatal: ") {
		t.Errorf("without chromium, required: %q, want a failure", how)
	}
}
