package otlp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// writeWebConfig writes a self-signed certificate and a web config file
// with TLS and one basic-auth user, as an operator would for /metrics.
func writeWebConfig(t *testing.T, user, pass string) string {
	t.Helper()
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	hash, _ := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	cfg := "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  " + user + ": " + string(hash) + "\n"
	path := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The gRPC receiver takes --web.config.file's TLS and basic auth: a call
// without the right credentials is refused and folds nothing.
func TestOTLPGRPCWebConfig(t *testing.T) {
	path := writeWebConfig(t, "engine", "s3cret")
	sec, err := otlp.GRPCSecurity(path)
	if err != nil {
		t.Fatal(err)
	}
	recv := otlp.New(otlp.Options{})
	gs := grpc.NewServer(append(recv.GRPCServerOptions(), sec...)...)
	recv.RegisterGRPC(gs)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(l)
	defer gs.Stop()
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := ptraceotlp.NewGRPCClient(cc)
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{1})
	sp.SetStartTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(-2 * time.Second)))
	sp.SetEndTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(-time.Second)))
	sp.Attributes().PutDouble(otlp.AttrE2E, 1)
	sp.Attributes().PutInt(otlp.AttrCompletionTokens, 3)
	export := func(auth string) error {
		ctx := context.Background()
		if auth != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(auth)))
		}
		_, err := client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
		return err
	}
	for _, auth := range []string{"", "engine:wrong", "nobody:s3cret"} {
		if err := export(auth); status.Code(err) != codes.Unauthenticated {
			t.Errorf("credentials %q: %v, want Unauthenticated", auth, err)
		}
	}
	if n := recv.Spans(otlp.ResultUnmatched); n != 0 {
		t.Errorf("refused calls reached the receiver: %d spans", n)
	}
	for range 2 { // the second time from the cache of accepted headers
		if err := export("engine:s3cret"); err != nil {
			t.Fatal(err)
		}
	}
	// No sink: the request span is counted as unmatched, and its second
	// delivery as a copy.
	if n, d := recv.Spans(otlp.ResultUnmatched), recv.Spans(otlp.ResultDuplicate); n != 1 || d != 1 {
		t.Errorf("accepted calls: %d spans unmatched, %d copies; want 1 and 1", n, d)
	}
	// A plaintext client cannot talk to the TLS listener.
	plain, _ := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecureCreds()))
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := ptraceotlp.NewGRPCClient(plain).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td)); err == nil {
		t.Error("a plaintext call was accepted by the TLS listener")
	}
}

func insecureCreds() credentials.TransportCredentials { return insecure.NewCredentials() }
