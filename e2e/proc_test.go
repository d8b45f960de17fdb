package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the daemon, built once by TestMain without the race detector
// (the daemons and engines are separate processes).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goodput-e2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "goodput-exporter")
	// -buildvcs=false: a checkout owned by another user (CI containers)
	// would otherwise fail the build on git's ownership check.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", binary, "../cmd/exporter")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building the daemon: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// need returns the path of the first of names found, or skips the test;
// with GOODPUT_REQUIRE_PROMTOOL set (CI) a missing binary fails it, as
// internal/promtool does.
func need(t *testing.T, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("GOODPUT_REQUIRE_PROMTOOL") != "" {
		t.Fatalf("%s is required but not installed (apt-get install %s)", names[0], pkg)
	}
	t.Skipf("%s not installed (apt-get install %s): end-to-end suite skipped", names[0], pkg)
	return ""
}

// proc is a process the suite started, in its own process group, its
// output in a log file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	mu   sync.Mutex
	out  *bytes.Buffer // stdout, for processes that print their addresses
	// started is just before the process started, ready when the suite
	// saw it ready (set by whoever waits for it).
	started, ready time.Time
}

// start runs a command in its own process group; t.Cleanup kills the
// group (also when the test fails or panics into Cleanup).
func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{}), out: &bytes.Buffer{}, started: time.Now()}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(args[0], args[1:]...)
	// Its own group, killed whole by kill; and killed by the kernel if
	// this test process dies first (a test timeout skips t.Cleanup).
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd.Stderr = f
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			fmt.Fprintln(f, sc.Text())
		}
		p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

// kill ends the process group and waits for the process.
func (p *proc) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// stdout is what the process has printed so far.
func (p *proc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return fmt.Sprintf("--- %s log (%s), last lines:\n%s", p.name, p.log, b)
}

// waitLine waits until the process printed a line starting with prefix
// and returns stdout so far.
func (p *proc) waitLine(t *testing.T, prefix string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		out := p.stdout()
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix) {
				return out
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited before printing %q\n%s", p.name, prefix, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no %q within %v\n%s", p.name, prefix, within, p.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort is a loopback port free a moment ago; n consecutive ones when
// n > 1 (simulate takes the port after its engines for the GPUs).
func freePort(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := true
		var more []net.Listener
		for i := 1; i < n && ok; i++ {
			m, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+i))
			if err != nil {
				ok = false
				break
			}
			more = append(more, m)
		}
		l.Close()
		for _, m := range more {
			m.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free loopback ports")
	return 0
}

// waitHTTP polls url until it answers 200.
func waitHTTP(t *testing.T, p *proc, url string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited\n%s", p.name, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered %s within %v (%v)\n%s", p.name, url, within, err, p.tail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
