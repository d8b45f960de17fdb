package main

import (
	"errors"
	"time"

	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/otlp"
)

// otlpFlags turn on the OTLP trace receiver: engines send their request
// spans, and goodput is judged from them exactly (bound="exact").
type otlpFlags struct {
	GRPCAddress         string        `name:"otlp.grpc.listen-address" placeholder:"ADDR" help:"Address to receive OTLP request traces on over gRPC (the OTLP default port is 4317), with --web.config.file's TLS and basic auth; off when empty."`
	HTTPAddress         string        `name:"otlp.http.listen-address" placeholder:"ADDR" help:"Address to receive OTLP request traces on over HTTP, POST /v1/traces, protobuf or JSON (the OTLP default port is 4318); served with --web.config.file's TLS and basic auth. Off when empty."`
	MaxRequestSize      int           `name:"otlp.max-request-size" default:"4194304" help:"Largest OTLP export request accepted, in bytes after decompression; larger ones are refused (HTTP 413, gRPC ResourceExhausted)."`
	MaxInflightRequests int           `name:"otlp.max-inflight-requests" default:"16" help:"Most OTLP export requests served at once on each transport (gRPC: at most twice --otlp.max-inflight-bytes in requests of --otlp.max-request-size; one gRPC connection at most an eighth of them, at least one); past it a sender is told to retry (HTTP 429, gRPC ResourceExhausted)."`
	MaxInflightBytes    int64         `name:"otlp.max-inflight-bytes" default:"16777216" help:"Most bytes the OTLP export requests served at once on each transport may hold (an HTTP body as read, a gRPC message once gRPC has read it); past it a sender is told to retry (HTTP 429, gRPC ResourceExhausted)."`
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

// receiver is the OTLP receiver the flags describe, its counters in the
// exporter's registry and its spans folded into the exporter's targets.
func (f *otlpFlags) receiver(ex *exporter.Exporter, e *env) *otlp.Receiver {
	recv := otlp.New(otlp.Options{Sink: ex, MaxRequestSize: int64(f.MaxRequestSize), Logger: e.logger,
		MaxInflightRequests: f.MaxInflightRequests, MaxInflightBytes: f.MaxInflightBytes,
		DedupWindow: f.DedupWindow, DedupSpans: f.DedupMaxSpans, MaxCompletionTokens: float64(f.MaxCompletionTokens)})
	ex.Registry().MustRegister(recv)
	return recv
}
