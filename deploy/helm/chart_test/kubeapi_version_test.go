package chart_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// The kube-apiserver of `make test-kubernetes` is the release of the
// client-go the daemon uses: test/kubernetes/apiserver requires
// k8s.io/kubernetes v1.X.Y and pins every staging module it replaces to
// v0.X.Y, the daemon's client-go version.
func TestAPIServerModuleMatchesClientGo(t *testing.T) {
	parse := func(path string) *goMod { return parseGoMod(readFile(t, path)) }
	daemon := parse(filepath.Join(root, "go.mod"))
	wrapper := parse(filepath.Join(root, "test/kubernetes/apiserver/go.mod"))
	var clientGo string
	for _, r := range daemon.Require {
		if r.path == "k8s.io/client-go" {
			clientGo = r.version
		}
	}
	if !strings.HasPrefix(clientGo, "v0.") {
		t.Fatalf("the daemon's client-go version %q: want v0.X.Y", clientGo)
	}
	want := "v1." + strings.TrimPrefix(clientGo, "v0.")
	var kube string
	for _, r := range wrapper.Require {
		if r.path == "k8s.io/kubernetes" {
			kube = r.version
		}
	}
	if kube != want {
		t.Errorf("test/kubernetes/apiserver requires k8s.io/kubernetes %q, want %s (client-go %s)", kube, want, clientGo)
	}
	pinned := map[string]bool{}
	for _, r := range wrapper.Replace {
		pinned[r.old] = true
		if r.new != r.old || r.newVersion != clientGo {
			t.Errorf("replace %s => %s %s, want => %s %s", r.old, r.new, r.newVersion, r.old, clientGo)
		}
	}
	// Every staging module in the build is pinned: those the Kubernetes
	// tree requires at v0.0.0 and those at a release version (the rest
	// of the k8s.io modules are pseudo-versions: kube-openapi, utils).
	for _, r := range wrapper.Require {
		if strings.HasPrefix(r.path, "k8s.io/") && !strings.HasPrefix(r.version, "v0.0.0-") && strings.HasPrefix(r.version, "v0.") && !pinned[r.path] {
			t.Errorf("%s %s is not pinned by a replace", r.path, r.version)
		}
	}
	if len(pinned) == 0 {
		t.Error("test/kubernetes/apiserver pins no staging module")
	}
}

// goMod is the part of a go.mod file the test reads.
type goMod struct {
	Require []struct{ path, version string }
	Replace []struct{ old, new, newVersion string }
}

// parseGoMod reads require and replace directives, single or in blocks
// (a replace here names a module path and version on both sides).
func parseGoMod(text string) *goMod {
	m := &goMod{}
	block := ""
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		case f[0] == ")":
			block = ""
			continue
		}
		single := f[0] == "require" || f[0] == "replace"
		if single {
			block, f = f[0], f[1:]
		}
		switch {
		case block == "require" && len(f) == 2:
			m.Require = append(m.Require, struct{ path, version string }{f[0], f[1]})
		case block == "replace" && len(f) == 4 && f[1] == "=>":
			m.Replace = append(m.Replace, struct{ old, new, newVersion string }{f[0], f[2], f[3]})
		}
		if single {
			block = ""
		}
	}
	return m
}
