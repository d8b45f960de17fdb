package attribution

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Procfs reads processes and sockets under a proc mount. In a container it
// is the host's /proc mounted somewhere (with hostPID for the PIDs NVML
// reports to mean anything). The listening sockets are those of the
// network namespace Root/net belongs to: the host's with hostNetwork.
type Procfs struct {
	Root string
}

// NewProcfs roots process lookups at root; empty means /proc.
func NewProcfs(root string) *Procfs {
	if root == "" {
		root = "/proc"
	}
	return &Procfs{Root: root}
}

// tcpListen is the st column of a socket in the LISTEN state.
const tcpListen = "0A"

// Listeners maps the inode of each listening TCP socket (IPv4 and IPv6) to
// its port. A missing tcp6 table (IPv6 off) is not an error.
func (p *Procfs) Listeners() (map[uint64]int, error) {
	out := map[uint64]int{}
	found := 0
	for _, name := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(p.Root, "net", name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read listening sockets: %w", err)
		}
		found++
		if err := parseTCP(b, out); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(p.Root, "net", name), err)
		}
	}
	if found == 0 {
		return nil, fmt.Errorf("no %s/net/tcp or tcp6: %w", p.Root, fs.ErrNotExist)
	}
	return out, nil
}

// parseTCP reads a /proc/net/tcp or tcp6 table:
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
//	0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0   0       12345 ...
func parseTCP(b []byte, out map[uint64]int) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		if f[3] != tcpListen {
			continue
		}
		_, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			return fmt.Errorf("bad local address %q", f[1])
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return fmt.Errorf("bad port in %q: %w", f[1], err)
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return fmt.Errorf("bad inode %q: %w", f[9], err)
		}
		if inode != 0 {
			out[inode] = int(port)
		}
	}
	return sc.Err()
}

// SocketInodes lists the socket inodes a process holds open, from its
// fd/* links (socket:[inode]). Reading another user's fds needs root or
// CAP_SYS_PTRACE.
func (p *Procfs) SocketInodes(pid int) ([]uint64, error) {
	dir := filepath.Join(p.Root, strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list fds: %w", err)
	}
	var out []uint64
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		rest, ok := strings.CutPrefix(target, "socket:[")
		if !ok {
			continue
		}
		if ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64); err == nil {
			out = append(out, ino)
		}
	}
	return out, nil
}

// Parent reads the PPid line of /proc/<pid>/status.
func (p *Procfs) Parent(pid int) (int, error) {
	b, err := os.ReadFile(filepath.Join(p.Root, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, fmt.Errorf("process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "PPid:"); ok {
			ppid, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return 0, fmt.Errorf("process %d: bad PPid %q: %w", pid, v, err)
			}
			return ppid, nil
		}
	}
	return 0, fmt.Errorf("process %d: no PPid in status", pid)
}
