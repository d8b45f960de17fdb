package otlp

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/goodput-exporter/goodput-exporter/internal/webserve"
)

// Listeners are the receiver's open sockets, gRPC and HTTP, either nil
// when off.
type Listeners struct {
	grpc, http net.Listener
	stop       []func() // servers to stop once the daemon ends
}

// Shutdown stops the receivers' servers and waits for them.
func (ls *Listeners) Shutdown() {
	if ls == nil {
		return
	}
	for _, stop := range ls.stop {
		stop()
	}
}

// Listen opens the receiver's addresses (either "": off) before anything
// starts, so that a taken port fails the start.
func Listen(grpcAddress, httpAddress string) (*Listeners, error) {
	var ls Listeners
	var err error
	if grpcAddress != "" {
		if ls.grpc, err = net.Listen("tcp", grpcAddress); err != nil {
			return nil, fmt.Errorf("--otlp.grpc.listen-address %s: %w", grpcAddress, err)
		}
	}
	if httpAddress != "" {
		if ls.http, err = net.Listen("tcp", httpAddress); err != nil {
			if ls.grpc != nil {
				ls.grpc.Close()
			}
			return nil, fmt.Errorf("--otlp.http.listen-address %s: %w", httpAddress, err)
		}
	}
	return &ls, nil
}

// Close closes the sockets of a receiver that was never served.
func (ls *Listeners) Close() {
	if ls == nil {
		return
	}
	if ls.grpc != nil {
		ls.grpc.Close()
	}
	if ls.http != nil {
		ls.http.Close()
	}
}

// Serve runs recv on the open listeners until ctx ends: gRPC with
// webConfig's TLS and basic auth (GRPCSecurity), HTTP POST /v1/traces
// through exporter-toolkit with the same file.
func (ls *Listeners) Serve(ctx context.Context, recv *Receiver, webConfig string, logger *slog.Logger) error {
	if ls == nil {
		return nil
	}
	if ls.grpc != nil {
		sec, err := GRPCSecurity(webConfig)
		if err != nil {
			return err
		}
		gs := grpc.NewServer(append(recv.GRPCServerOptions(), sec...)...)
		recv.RegisterGRPC(gs)
		go func() {
			if err := gs.Serve(recv.GuardListener(ls.grpc)); err != nil {
				logger.Error("OTLP gRPC receiver stopped", "err", err)
			}
		}()
		ls.stop = append(ls.stop, gs.Stop)
		logger.Info("receiving OTLP traces over gRPC", "address", ls.grpc.Addr().String())
	}
	if ls.http != nil {
		mux := http.NewServeMux()
		mux.Handle("/v1/traces", recv)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute} // a sender trickling a body cannot hold a connection forever
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Its "Listening on" line says it is the receiver's, not /metrics'.
			if err := webserve.Serve(ctx, srv, []net.Listener{ls.http}, webConfig, logger.With("component", "otlp")); err != nil {
				logger.Error("OTLP HTTP receiver stopped", "err", err)
			}
		}()
		ls.stop = append(ls.stop, func() { <-done })
		logger.Info("receiving OTLP traces over HTTP", "address", ls.http.Addr().String(), "path", "/v1/traces")
	}
	return nil
}
