package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"google.golang.org/grpc"

	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// otlpFlags turn on the OTLP trace receiver: engines send their request
// spans, and goodput is judged from them exactly (bound="exact").
type otlpFlags struct {
	GRPCAddress         string        `name:"otlp.grpc.listen-address" placeholder:"ADDR" help:"Address to receive OTLP request traces on over gRPC (the OTLP default port is 4317), with --web.config.file's TLS and basic auth; off when empty."`
	HTTPAddress         string        `name:"otlp.http.listen-address" placeholder:"ADDR" help:"Address to receive OTLP request traces on over HTTP, POST /v1/traces, protobuf or JSON (the OTLP default port is 4318); served with --web.config.file's TLS and basic auth. Off when empty."`
	MaxRequestSize      int           `name:"otlp.max-request-size" default:"4194304" help:"Largest OTLP export request accepted, in bytes after decompression; larger ones are refused (HTTP 413, gRPC ResourceExhausted)."`
	MaxInflightRequests int           `name:"otlp.max-inflight-requests" default:"16" help:"Most OTLP export requests served at once; past it a sender is told to retry (HTTP 429, gRPC ResourceExhausted)."`
	MaxInflightBytes    int64         `name:"otlp.max-inflight-bytes" default:"16777216" help:"Most bytes the OTLP export requests served at once may hold (an HTTP body as read, a gRPC message at --otlp.max-request-size); past it a sender is told to retry (HTTP 429, gRPC ResourceExhausted)."`
	DedupWindow         time.Duration `name:"otlp.dedup-window" default:"10m" help:"A span delivered again (OTLP delivery is at least once) within this time of the first is counted once."`
	DedupMaxSpans       int           `name:"otlp.dedup-max-spans" default:"524288" help:"Most spans the duplicate filter remembers (16 bytes each, allocated at the first span): a copy is recognised within --otlp.dedup-window or the next half of this many spans, whichever ends first."`
	MaxCompletionTokens int64         `name:"otlp.max-completion-tokens" default:"10000000" help:"Most generation tokens one request span may claim; a span over it, or over its own gen_ai.request.max_tokens, is refused as implausible."`
}

func (f *otlpFlags) validate() error {
	if f.MaxRequestSize < 0 {
		return errors.New("--otlp.max-request-size must be positive (0: the default, 4 MiB)")
	}
	if f.MaxInflightRequests < 0 || f.MaxInflightBytes < 0 || f.DedupMaxSpans < 0 || f.MaxCompletionTokens < 0 || f.DedupWindow < 0 {
		return errors.New("--otlp.max-inflight-requests, --otlp.max-inflight-bytes, --otlp.dedup-max-spans, --otlp.max-completion-tokens and --otlp.dedup-window must be positive (0: the default)")
	}
	if f.MaxRequestSize > 0 && f.MaxInflightBytes > 0 && f.MaxInflightBytes < int64(f.MaxRequestSize) {
		return errors.New("--otlp.max-inflight-bytes must be at least --otlp.max-request-size, or no export of the largest size could be served")
	}
	return nil
}

func (f *otlpFlags) enabled() bool { return f.GRPCAddress != "" || f.HTTPAddress != "" }

// otlpListeners are the receiver's open sockets.
type otlpListeners struct {
	grpc, http net.Listener
	stop       []func() // servers to stop once the daemon ends
}

// shutdown stops the receivers' servers and waits for them.
func (ls *otlpListeners) shutdown() {
	if ls == nil {
		return
	}
	for _, stop := range ls.stop {
		stop()
	}
}

// listen opens the receiver's addresses before anything starts, so that a
// taken port fails the start.
func (f *otlpFlags) listen() (*otlpListeners, error) {
	var ls otlpListeners
	var err error
	if f.GRPCAddress != "" {
		if ls.grpc, err = net.Listen("tcp", f.GRPCAddress); err != nil {
			return nil, fmt.Errorf("--otlp.grpc.listen-address %s: %w", f.GRPCAddress, err)
		}
	}
	if f.HTTPAddress != "" {
		if ls.http, err = net.Listen("tcp", f.HTTPAddress); err != nil {
			if ls.grpc != nil {
				ls.grpc.Close()
			}
			return nil, fmt.Errorf("--otlp.http.listen-address %s: %w", f.HTTPAddress, err)
		}
	}
	return &ls, nil
}

func (ls *otlpListeners) close() {
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

// serve runs the receiver on the open listeners until ctx ends; its
// counters join the exporter's registry.
func (f *otlpFlags) serve(ctx context.Context, ls *otlpListeners, ex *exporter.Exporter, webConfig string, e *env) error {
	if ls == nil {
		return nil
	}
	recv := otlp.New(otlp.Options{Sink: ex, MaxRequestSize: int64(f.MaxRequestSize), Logger: e.logger,
		MaxInflightRequests: f.MaxInflightRequests, MaxInflightBytes: f.MaxInflightBytes,
		DedupWindow: f.DedupWindow, DedupSpans: f.DedupMaxSpans, MaxCompletionTokens: float64(f.MaxCompletionTokens)})
	ex.Registry().MustRegister(recv)
	if ls.grpc != nil {
		sec, err := otlp.GRPCSecurity(webConfig)
		if err != nil {
			return err
		}
		gs := grpc.NewServer(append(recv.GRPCServerOptions(), sec...)...)
		recv.RegisterGRPC(gs)
		go func() {
			if err := gs.Serve(ls.grpc); err != nil {
				e.logger.Error("OTLP gRPC receiver stopped", "err", err)
			}
		}()
		ls.stop = append(ls.stop, gs.Stop)
		e.logger.Info("receiving OTLP traces over gRPC", "address", ls.grpc.Addr().String())
	}
	if ls.http != nil {
		mux := http.NewServeMux()
		mux.Handle("/v1/traces", recv)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute} // a sender trickling a body cannot hold a connection forever
		done := make(chan struct{})
		go func() {
			defer close(done)
			// Its "Listening on" line says it is the receiver's, not /metrics'.
			oe := &env{ctx: e.ctx, stdout: e.stdout, stderr: e.stderr, logger: e.logger.With("component", "otlp")}
			if err := serveHTTP(ctx, srv, []net.Listener{ls.http}, webConfig, oe); err != nil {
				e.logger.Error("OTLP HTTP receiver stopped", "err", err)
			}
		}()
		ls.stop = append(ls.stop, func() { <-done })
		e.logger.Info("receiving OTLP traces over HTTP", "address", ls.http.Addr().String(), "path", "/v1/traces")
	}
	return nil
}
