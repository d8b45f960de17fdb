// Package memlimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit, what GOMEMLIMIT sets) from the container's memory
// limit, so that the garbage collector works harder as the heap nears the
// limit instead of leaving garbage for the kernel's OOM killer to find.
package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// DefaultRatio is the share of the container's limit given to the Go
// runtime: the rest is for what the runtime does not count (cgo
// allocations such as NVML's, the binary's text, kernel buffers), and the
// collector's reaction time. The binary's resident pages alone are about
// 28 MiB (of its 41 MiB), which 10 % of the chart's 192 MiB did not
// cover: the fleet test's peak resident memory was 198 MiB at 0.9.
const DefaultRatio = 0.8

// unlimited: cgroup v1 writes "no limit" as the largest page-aligned
// int64, and anything past this is no limit in practice either.
const unlimited = 1 << 62

// Setting is what Apply did.
type Setting struct {
	// Container is the container's memory limit in bytes (0: none found).
	Container int64
	// From says where the container limit (or the soft limit) came from.
	From string
	// Soft is the runtime's soft limit in bytes after Apply (math.MaxInt64:
	// none).
	Soft int64
}

func (s Setting) String() string {
	if s.From == "GOMEMLIMIT" {
		return fmt.Sprintf("soft memory limit %d bytes from GOMEMLIMIT", s.Soft)
	}
	if s.Container == 0 {
		return "no container memory limit found: no soft memory limit set"
	}
	return fmt.Sprintf("soft memory limit %d bytes, %.0f%% of the container's %d bytes (%s)",
		s.Soft, 100*float64(s.Soft)/float64(s.Container), s.Container, s.From)
}

// Apply sets the runtime's soft memory limit. GOMEMLIMIT (getenv), when
// set, wins: the runtime has read it already and Apply leaves it alone.
// Otherwise the container's limit is limit when positive (a flag, fed
// from the pod's resources.limits.memory), else the cgroup's (v2
// memory.max, v1 memory.limit_in_bytes, read under root: "/" outside
// tests); the soft limit is ratio of it. With no limit anywhere nothing
// is set.
func Apply(getenv func(string) string, limit int64, ratio float64, root fs.FS) (Setting, error) {
	if ratio <= 0 || ratio > 1 {
		return Setting{}, fmt.Errorf("memory limit ratio %v is not in (0, 1]", ratio)
	}
	if getenv("GOMEMLIMIT") != "" {
		return Setting{From: "GOMEMLIMIT", Soft: debug.SetMemoryLimit(-1)}, nil
	}
	s := Setting{Container: limit, From: "--runtime.memory-limit"}
	if limit <= 0 {
		var err error
		s.Container, s.From, err = CgroupLimit(root)
		if err != nil {
			return Setting{Soft: debug.SetMemoryLimit(-1)}, err
		}
	}
	if s.Container <= 0 {
		return Setting{Soft: debug.SetMemoryLimit(-1)}, nil
	}
	s.Soft = int64(float64(s.Container) * ratio)
	debug.SetMemoryLimit(s.Soft)
	return s, nil
}

// CgroupLimit reads this process's memory limit from its cgroup under
// root (a file system rooted at "/"): cgroup v2's memory.max, or v1's
// memory.limit_in_bytes, the smallest along the cgroup's path up to the
// root of the hierarchy (a limit may be set on a parent: the pod's), or
// at the hierarchy's root when the container sees its own cgroup there
// (a cgroup namespace). It returns 0 when there is no limit, and the file
// it read the limit from.
func CgroupLimit(root fs.FS) (int64, string, error) {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil // not Linux
	}
	if err != nil {
		return 0, "", err
	}
	var v2, v1 string
	hasV1 := false
	sc := bufio.NewScanner(bytes.NewReader(self))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				v1, hasV1 = parts[2], true
			}
		}
	}
	if v2 != "" {
		if n, file, ok, err := smallest(root, "sys/fs/cgroup", v2, "memory.max"); ok || err != nil {
			return n, file, err
		}
	}
	if hasV1 {
		if n, file, ok, err := smallest(root, "sys/fs/cgroup/memory", v1, "memory.limit_in_bytes"); ok || err != nil {
			return n, file, err
		}
	}
	return 0, "", nil
}

// smallest reads name in the cgroup directory at mount+cg and each parent
// up to mount, and returns the smallest limit (0: none) and where it was
// read; ok is false when no such file exists at all (not this version).
func smallest(root fs.FS, mount, cg, name string) (n int64, file string, ok bool, err error) {
	dir := path.Clean("/" + cg)
	for {
		p := path.Join(mount, dir, name)
		b, rerr := fs.ReadFile(root, p)
		switch {
		case errors.Is(rerr, fs.ErrNotExist):
		case rerr != nil:
			return 0, "", false, rerr
		default:
			ok = true
			v, perr := parseLimit(b)
			if perr != nil {
				return 0, "", true, fmt.Errorf("/%s: %w", p, perr)
			}
			if v > 0 && (n == 0 || v < n) {
				n, file = v, "/"+p
			}
		}
		if dir == "/" {
			return n, file, ok, nil
		}
		dir = path.Dir(dir)
	}
}

// parseLimit reads a cgroup limit file: bytes, or "max" (v2) or a value
// past 2^62 (v1) for none (0).
func parseLimit(b []byte) (int64, error) {
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a memory limit: %q", s)
	}
	if v >= unlimited {
		return 0, nil
	}
	return int64(v), nil
}
