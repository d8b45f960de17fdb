package attribution

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fakeProc copies testdata/proc to a temporary directory and adds the fd
// links git cannot usefully hold (see testdata/proc/README).
func fakeProc(t *testing.T) *Procfs {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/proc")); err != nil {
		t.Fatal(err)
	}
	fds := map[int][]string{
		100: {"/dev/null", "socket:[5001]", "socket:[5003]", "anon_inode:[eventfd]"},
		101: {"/dev/nvidia0", "socket:[7777]"},
		102: {"/dev/nvidiactl"},
		200: {"socket:[6001]", "/dev/nvidia1"},
		300: {"socket:[5003]", "socket:[5005]"},
		400: {"socket:[5004]"},
	}
	for pid, links := range fds {
		dir := filepath.Join(root, fmt.Sprint(pid), "fd")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, target := range links {
			if err := os.Symlink(target, filepath.Join(dir, fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	return NewProcfs(root)
}

func TestProcfsListeners(t *testing.T) {
	got, err := fakeProc(t).Listeners()
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64]int{5001: 8000, 5004: 9100, 6001: 9000}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("listeners = %v, want %v (LISTEN sockets only, IPv4 and IPv6)", got, want)
	}
}

func TestProcfsSocketsAndParents(t *testing.T) {
	p := fakeProc(t)
	inodes, err := p.SocketInodes(100)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(inodes)
	if fmt.Sprint(inodes) != "[5001 5003]" {
		t.Errorf("pid 100 sockets = %v", inodes)
	}
	for pid, want := range map[int]int{102: 101, 101: 100, 100: 1} {
		if got, err := p.Parent(pid); err != nil || got != want {
			t.Errorf("Parent(%d) = %d, %v; want %d", pid, got, err, want)
		}
	}
	if _, err := p.Parent(500); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Parent of a gone process: %v, want not-exist", err)
	}
}

func TestProcfsWithoutNetTables(t *testing.T) {
	if _, err := NewProcfs(t.TempDir()).Listeners(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want not-exist", err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000:ZZZZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1\n"
	if err := os.WriteFile(filepath.Join(root, "net", "tcp"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewProcfs(root).Listeners(); err == nil {
		t.Error("a bad port parsed")
	}
}
