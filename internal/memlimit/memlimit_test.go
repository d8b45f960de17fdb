package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"
)

func files(kv ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = &fstest.MapFile{Data: []byte(kv[i+1])}
	}
	return m
}

// The layouts a container meets: cgroup v2 with and without a cgroup
// namespace, a limit on the pod's cgroup only, v1, the hybrid layout
// (v1 controllers beside an empty v2 hierarchy), and no limit at all.
func TestCgroupLimit(t *testing.T) {
	const v1None = "9223372036854771712\n" // what v1 writes for no limit
	for _, c := range []struct {
		name     string
		fs       fstest.MapFS
		want     int64
		wantFile string
	}{
		{"v2 in its own namespace", files(
			"proc/self/cgroup", "0::/\n",
			"sys/fs/cgroup/memory.max", "201326592\n"), 201326592, "/sys/fs/cgroup/memory.max"},
		{"v2 nested, limit on the pod", files(
			"proc/self/cgroup", "0::/kubepods.slice/pod1/cri-c1\n",
			"sys/fs/cgroup/kubepods.slice/pod1/cri-c1/memory.max", "max\n",
			"sys/fs/cgroup/kubepods.slice/pod1/memory.max", "268435456\n",
			"sys/fs/cgroup/kubepods.slice/memory.max", "max\n"), 268435456, "/sys/fs/cgroup/kubepods.slice/pod1/memory.max"},
		{"v2 nested, the smallest wins", files(
			"proc/self/cgroup", "0::/kubepods.slice/pod1/cri-c1\n",
			"sys/fs/cgroup/kubepods.slice/pod1/cri-c1/memory.max", "201326592\n",
			"sys/fs/cgroup/kubepods.slice/pod1/memory.max", "268435456\n"), 201326592, "/sys/fs/cgroup/kubepods.slice/pod1/cri-c1/memory.max"},
		{"v2 without a limit", files(
			"proc/self/cgroup", "0::/\n",
			"sys/fs/cgroup/memory.max", "max\n"), 0, ""},
		{"v1", files(
			"proc/self/cgroup", "11:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "134217728\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes", v1None), 134217728, "/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"v1 without a limit", files(
			"proc/self/cgroup", "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes", v1None), 0, ""},
		{"hybrid: v1 memory beside an empty v2 hierarchy", files(
			"proc/self/cgroup", "4:memory:/process_api/31a5\n0::/\n",
			"sys/fs/cgroup/memory/process_api/31a5/memory.limit_in_bytes", "1073741824\n"), 1073741824, "/sys/fs/cgroup/memory/process_api/31a5/memory.limit_in_bytes"},
		{"no cgroup files", files("proc/self/cgroup", "0::/\n"), 0, ""},
		{"not Linux", files(), 0, ""},
	} {
		got, file, err := CgroupLimit(c.fs)
		if err != nil || got != c.want || file != c.wantFile {
			t.Errorf("%s: %d from %q, %v; want %d from %q", c.name, got, file, err, c.want, c.wantFile)
		}
	}
	_, _, err := CgroupLimit(files("proc/self/cgroup", "0::/\n", "sys/fs/cgroup/memory.max", "lots\n"))
	if err == nil || !strings.Contains(err.Error(), "/sys/fs/cgroup/memory.max") {
		t.Errorf("a limit that is not a number: %v, want an error naming the file", err)
	}
}

// The soft limit is the ratio of the flag's limit, else of the cgroup's;
// GOMEMLIMIT is left alone; no limit sets none.
func TestApply(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(old)
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	cg := files("proc/self/cgroup", "0::/\n", "sys/fs/cgroup/memory.max", "201326592\n")

	s, err := Apply(env(""), 0, 0.9, cg)
	// 0.9 × 192 MiB = 181,193,932.8 bytes, rounded down.
	if err != nil || s.Soft != 181193932 || debug.SetMemoryLimit(-1) != 181193932 || s.Container != 201326592 || s.From != "/sys/fs/cgroup/memory.max" {
		t.Errorf("from the cgroup: %+v %v, runtime %d", s, err, debug.SetMemoryLimit(-1))
	}
	s, err = Apply(env(""), 256<<20, 0.75, cg)
	if err != nil || s.Soft != 201326592 || debug.SetMemoryLimit(-1) != 201326592 || s.From != "--runtime.memory-limit" {
		t.Errorf("from the flag: %+v %v", s, err)
	}
	debug.SetMemoryLimit(123 << 20) // as the runtime would from GOMEMLIMIT=123MiB
	s, err = Apply(env("123MiB"), 256<<20, 0.9, cg)
	if err != nil || s.Soft != 123<<20 || debug.SetMemoryLimit(-1) != 123<<20 || s.From != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT: %+v %v", s, err)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	s, err = Apply(env(""), 0, 0.9, files("proc/self/cgroup", "0::/\n", "sys/fs/cgroup/memory.max", "max\n"))
	if err != nil || s.Container != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("without a limit: %+v %v, runtime %d", s, err, debug.SetMemoryLimit(-1))
	}
	if !strings.Contains(s.String(), "no container memory limit") {
		t.Errorf("without a limit, says %q", s)
	}
	for _, r := range []float64{0, -0.5, 1.5} {
		if _, err := Apply(env(""), 0, r, cg); err == nil {
			t.Errorf("ratio %v accepted", r)
		}
	}
}
