package otlp

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v3"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// GRPCSecurity gives the OTLP gRPC receiver the TLS and basic auth of
// --web.config.file, as /metrics and the HTTP receiver have them: the
// file's tls_server_config (when it names a certificate) and its
// basic_auth_users, checked on every call's "authorization" metadata
// (OTEL_EXPORTER_OTLP_HEADERS="authorization=Basic ..." on the sender).
// The caller has checked the file with web.Validate before.
func GRPCSecurity(path string) ([]grpc.ServerOption, error) {
	if path == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c := web.Config{TLSConfig: web.TLSConfig{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}}
	if err := yaml.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c.TLSConfig.SetDirectory(filepath.Dir(path))
	var opts []grpc.ServerOption
	if c.TLSConfig.TLSCertPath != "" || c.TLSConfig.TLSCert != "" {
		tc, err := web.ConfigToTLSConfig(&c.TLSConfig)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	if len(c.Users) > 0 {
		users := make(map[string]string, len(c.Users))
		for u, h := range c.Users {
			users[u] = string(h)
		}
		a := &basicAuth{users: users}
		opts = append(opts, grpc.UnaryInterceptor(a.unary))
	}
	return opts, nil
}

// basicAuth checks bcrypt-hashed passwords. bcrypt is slow on purpose, so
// a header that passed once is remembered (only headers that passed are).
type basicAuth struct {
	users map[string]string
	mu    sync.Mutex
	ok    map[string]bool
}

func (a *basicAuth) check(header string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ok[header] {
		return true
	}
	enc, found := strings.CutPrefix(header, "Basic ")
	if !found {
		return false
	}
	dec, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return false
	}
	user, pass, found := strings.Cut(string(dec), ":")
	hash, known := a.users[user]
	if !found || !known {
		// Spend the same time as a known user, as exporter-toolkit does.
		bcrypt.CompareHashAndPassword([]byte("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"), []byte(pass))
		return false
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass)) != nil {
		return false
	}
	if a.ok == nil {
		a.ok = map[string]bool{}
	}
	a.ok[header] = true
	return true
}

func (a *basicAuth) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, h := range md.Get("authorization") {
		if a.check(h) {
			return next(ctx, req)
		}
	}
	return nil, status.Error(codes.Unauthenticated, "basic auth of --web.config.file required")
}
