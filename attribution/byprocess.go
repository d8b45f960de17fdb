package attribution

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
)

// maxAncestors bounds the walk up the process tree.
const maxAncestors = 64

// byProcess claims a GPU for the local target whose port is listened on by
// one of the GPU's compute processes or by the nearest ancestor of one
// that listens on any target port (vLLM and SGLang run the model in worker
// processes under the API server). Only GPUs no stronger method claimed
// are looked at, and only their processes' ancestry is read, never all of
// /proc.
func (a *Attributor) byProcess(gpus []GPU, targets []Target, configured map[string]bool, c *claims) error {
	if a.opts.Proc == nil {
		return nil
	}
	byPort := map[int][]string{}
	for _, t := range targets {
		if !configured[t.Name] && t.Port > 0 {
			byPort[t.Port] = append(byPort[t.Port], t.Name)
		}
	}
	var todo []int
	for i, g := range gpus {
		if len(g.PIDs) > 0 && !c.has(i, MethodConfig) && !c.has(i, MethodPodResources) {
			todo = append(todo, i)
		}
	}
	if len(byPort) == 0 || len(todo) == 0 {
		return nil
	}
	listening, err := a.opts.Proc.Listeners()
	if err != nil {
		return err
	}
	for inode, port := range listening {
		if byPort[port] == nil {
			delete(listening, inode)
		}
	}
	w := &walker{proc: a.opts.Proc, listening: listening, ports: map[int][]int{}}
	for _, i := range todo {
		for _, pid := range gpus[i].PIDs {
			for _, port := range w.portsOf(pid) {
				for _, name := range byPort[port] {
					c.add(i, name, MethodProcess)
				}
			}
		}
	}
	return errors.Join(w.errs...)
}

// walker finds which target ports a process or its ancestors listen on,
// remembering each process it read.
type walker struct {
	proc      *Procfs
	listening map[uint64]int // socket inode -> port, target ports only
	ports     map[int][]int  // pid -> ports it listens on
	errs      []error
}

func (w *walker) portsOf(pid int) []int {
	for range maxAncestors {
		if pid <= 1 {
			return nil // init (or systemd holding activation sockets) is everyone's ancestor
		}
		if ports := w.held(pid); len(ports) > 0 {
			return ports
		}
		parent, err := w.proc.Parent(pid)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) { // gone since the GPU listed it
				w.errs = append(w.errs, err)
			}
			return nil
		}
		pid = parent
	}
	return nil
}

func (w *walker) held(pid int) []int {
	if ports, ok := w.ports[pid]; ok {
		return ports
	}
	var ports []int
	inodes, err := w.proc.SocketInodes(pid)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		w.errs = append(w.errs, fmt.Errorf("process %d: %w", pid, err))
	}
	for _, ino := range inodes {
		if port, ok := w.listening[ino]; ok && !slices.Contains(ports, port) {
			ports = append(ports, port)
		}
	}
	w.ports[pid] = ports
	return ports
}
