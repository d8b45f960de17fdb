package chart_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// cluster is an etcd and a kube-apiserver on 127.0.0.1, no controller
// manager, no scheduler, no kubelet: what the API server itself does
// (validation, admission, RBAC, watches) is real; what controllers do
// (the default ServiceAccount, pods from a DaemonSet, pod status) the test
// does by hand.
type cluster struct {
	t                *testing.T
	dir              string
	apiserverBin     string
	apiserverArgs    []string
	apiserver        *exec.Cmd
	apiserverExited  chan struct{}
	etcd             *exec.Cmd
	url              string
	caPEM            []byte
	admin            *rest.Config
	auditLog         string
	warnings         *warnings
	apiserverVersion string
}

// warnings collects the Warning headers the API server sends (Pod
// Security's for a DaemonSet whose pods a namespace would refuse).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	w.list = append(w.list, text)
	w.mu.Unlock()
}

// take returns the warnings since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// pki writes a CA, the API server's serving certificate (127.0.0.1 and
// the kubernetes service's names), an admin client certificate (group
// system:masters) and the ServiceAccount token signing key, all made here.
func (c *cluster) pki() {
	t := c.t
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "goodput-exporter test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	writePEM(t, filepath.Join(c.dir, "ca.crt"), "CERTIFICATE", caDER)
	leaf := func(name string, serial int64, tmpl *x509.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(c.dir, name+".crt"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(c.dir, name+".key"), "EC PRIVATE KEY", kder)
	}
	leaf("apiserver", 2, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 0, 0, 1)},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	})
	leaf("admin", 3, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, filepath.Join(c.dir, "sa.key"), "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
	writePEM(t, filepath.Join(c.dir, "sa.pub"), "PUBLIC KEY", pub)
}

// auditPolicy records every request made with the chart's ServiceAccount
// (its metadata only: verb, URI, user agent, code), nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: ["system:serviceaccount:` + namespace + `:goodput-exporter"]
  - level: None
`

// startCluster starts etcd and the API server and waits until the API
// server is ready; both are stopped when the test ends.
func startCluster(t *testing.T, apiserverBin, etcdBin string) *cluster {
	c := &cluster{t: t, dir: t.TempDir(), apiserverBin: apiserverBin, warnings: &warnings{}}
	c.pki()
	c.auditLog = filepath.Join(c.dir, "audit.log")
	if err := os.WriteFile(filepath.Join(c.dir, "audit-policy.yaml"), []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}

	clientPort, peerPort := freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	c.etcd = exec.Command(etcdBin,
		"--name=test", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--log-level=warn")
	etcdLog := logFile(t, filepath.Join(c.dir, "etcd.log"))
	c.etcd.Stdout, c.etcd.Stderr = etcdLog, etcdLog
	if err := c.etcd.Start(); err != nil {
		t.Fatalf("etcd: %v", err)
	}
	t.Cleanup(func() {
		c.etcd.Process.Signal(syscall.SIGTERM)
		c.etcd.Wait()
	})

	port := freePort(t)
	c.url = "https://127.0.0.1:" + strconv.Itoa(port)
	c.apiserverArgs = []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port),
		// The loopback address cannot be the kubernetes service's endpoint.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir=" + filepath.Join(c.dir, "certs"),
		"--tls-cert-file=" + filepath.Join(c.dir, "apiserver.crt"),
		"--tls-private-key-file=" + filepath.Join(c.dir, "apiserver.key"),
		"--client-ca-file=" + filepath.Join(c.dir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(c.dir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(c.dir, "sa.key"),
		"--authorization-mode=RBAC",
		"--audit-policy-file=" + filepath.Join(c.dir, "audit-policy.yaml"),
		"--audit-log-path=" + c.auditLog,
		"--profiling=false",
	}
	c.admin = &rest.Config{
		Host: c.url, UserAgent: "chart-test-admin",
		TLSClientConfig: rest.TLSClientConfig{
			CAFile:   filepath.Join(c.dir, "ca.crt"),
			CertFile: filepath.Join(c.dir, "admin.crt"),
			KeyFile:  filepath.Join(c.dir, "admin.key"),
		},
		WarningHandler: c.warnings,
		QPS:            100, Burst: 200,
	}
	c.startAPIServer(3 * time.Minute)
	t.Cleanup(c.stopAPIServer)
	return c
}

func logFile(t *testing.T, path string) *os.File {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// startAPIServer starts the API server and waits for /readyz.
func (c *cluster) startAPIServer(within time.Duration) {
	t := c.t
	t.Helper()
	c.apiserver = exec.Command(c.apiserverBin, c.apiserverArgs...)
	out := logFile(t, filepath.Join(c.dir, "kube-apiserver.log"))
	c.apiserver.Stdout, c.apiserver.Stderr = out, out
	if err := c.apiserver.Start(); err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	exited := make(chan struct{})
	c.apiserverExited = exited
	cmd := c.apiserver
	go func() { cmd.Wait(); close(exited) }()
	cs := c.clientset(c.admin)
	deadline := time.Now().Add(within)
	for {
		body, err := cs.RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("kube-apiserver exited: %v\n%s", cmd.ProcessState, tail(filepath.Join(c.dir, "kube-apiserver.log"), 30))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after %v: %v %s\n%s", within, err, body, tail(filepath.Join(c.dir, "kube-apiserver.log"), 30))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if c.apiserverVersion == "" {
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatal(err)
		}
		c.apiserverVersion = v.GitVersion
	}
}

// stopAPIServer stops the API server (SIGTERM, as a rolling restart of a
// control plane does) and waits for it to exit.
func (c *cluster) stopAPIServer() {
	if c.apiserver == nil || c.apiserver.Process == nil {
		return
	}
	select {
	case <-c.apiserverExited:
		return
	default:
	}
	c.apiserver.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.apiserverExited:
	case <-time.After(60 * time.Second):
		c.apiserver.Process.Kill()
		<-c.apiserverExited
	}
}

// terminateAPIServer sends the API server SIGTERM and returns a channel
// closed when it has exited (killed after 90 s).
func (c *cluster) terminateAPIServer() <-chan struct{} {
	c.apiserver.Process.Signal(syscall.SIGTERM)
	proc, exited := c.apiserver.Process, c.apiserverExited
	go func() {
		select {
		case <-exited:
		case <-time.After(90 * time.Second):
			proc.Kill()
		}
	}()
	return exited
}

func (c *cluster) clientset(rc *rest.Config) *kubernetes.Clientset {
	c.t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		c.t.Fatal(err)
	}
	return cs
}

// tail returns the last n lines of a file, for a failure's message.
func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	AuditID        string `json:"auditID"`
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	RequestURI     string `json:"requestURI"`
	UserAgent      string `json:"userAgent"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// auditRequests returns the requests recorded in the audit log whose user
// agent starts with agent, one per audit ID (a watch is logged when its
// response starts and again when it ends), in order.
func (c *cluster) auditRequests(agent string) []auditEvent {
	c.t.Helper()
	f, err := os.Open(c.auditLog)
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	index := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			c.t.Fatalf("audit log: %v", err)
		}
		if !strings.HasPrefix(e.UserAgent, agent) {
			continue
		}
		if i, ok := index[e.AuditID]; ok {
			if e.ResponseStatus != nil {
				out[i].ResponseStatus = e.ResponseStatus
			}
			continue
		}
		index[e.AuditID] = len(out)
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (e auditEvent) String() string {
	code := "-"
	if e.ResponseStatus != nil {
		code = strconv.Itoa(e.ResponseStatus.Code)
	}
	return fmt.Sprintf("%s %s %s", e.Verb, e.RequestURI, code)
}
