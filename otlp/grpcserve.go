package otlp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
	"google.golang.org/protobuf/types/known/durationpb"
)

// HTTP/2 limits of the gRPC server. grpc-go (since 1.58.3; 1.85 pinned)
// answers HTTP/2 rapid reset by counting a stream's handler against
// MaxConcurrentStreams until it returns, reset or not, and by reading no
// further frames of a connection whose handlers are all busy; it has no
// RST_STREAM rate option, so the per-connection stream cap is the bound.
const (
	// grpcMessageTimeout is how long an export stream may take to send
	// its message (and be answered): a stream that opens and sends
	// nothing gives its slot back after it, as an HTTP body that trickles
	// does after the HTTP server's read timeout.
	grpcMessageTimeout = time.Minute
	// grpcHandshakeTimeout bounds a new connection's TLS and HTTP/2
	// handshake (grpc-go's default is 120 s).
	grpcHandshakeTimeout = 10 * time.Second
	// grpcMaxHeaderBytes caps a stream's header list (grpc-go's default
	// is 16 MiB); OTLP exporters send a few hundred bytes.
	grpcMaxHeaderBytes = 64 << 10
)

// grpcSlots is the number of gRPC exports admitted at once. gRPC reads a
// message whole before any hook runs, so a message's own bytes are
// bounded by the slots, not by the bytes cap (which bounds what is
// decoded): the slots are at most twice the bytes cap in messages of the
// largest size (8 by default), and at most maxReqs.
func grpcSlots(maxReqs int, maxBytes, maxSize int64) int {
	return max(1, min(maxReqs, int(2*maxBytes/maxSize)))
}

// grpcStreamsPerConn is the most streams one connection may have open:
// an eighth of the gRPC slots (1 by default), so that an attacker needs 8
// connections at once to hold every slot, and one connection resetting
// its streams as fast as it can (HTTP/2 rapid reset) holds at most one.
// grpc-go clients queue their calls past it rather than fail them.
func grpcStreamsPerConn(slots int) uint32 { return uint32(max(1, slots/8)) }

// GRPCServerOptions are the options the gRPC server must be built with:
// the message cap (the library refuses larger ones with ResourceExhausted
// before the receiver sees them), the admission tap, the raw codec that
// charges a message's bytes once read, and the HTTP/2 limits.
func (r *Receiver) GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(r.opts.MaxRequestSize)),
		grpc.InTapHandle(r.tap),
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxConcurrentStreams(grpcStreamsPerConn(r.grpcLimit.maxReqs)),
		grpc.ConnectionTimeout(grpcHandshakeTimeout),
		grpc.MaxHeaderListSize(grpcMaxHeaderBytes),
		// A client pinging more often than every 10 s is sent GOAWAY
		// (grpc-go's default policy allows one ping in 5 min, which
		// OpenTelemetry exporters configured with keepalive trip).
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// Idle connections are closed after 5 min; a silent peer is
		// found by a ping after a minute and dropped 20 s later.
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 5 * time.Minute, Time: time.Minute, Timeout: 20 * time.Second}),
	}
}

// tap gives an export stream grpcMessageTimeout to send its message and
// be answered: a stream that opens and sends nothing gives its slot back
// after it.
func (r *Receiver) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if info.FullMethodName != exportMethod {
		return ctx, nil
	}
	ctx, cancel := context.WithTimeout(ctx, grpcMessageTimeout)
	context.AfterFunc(ctx, cancel)
	return ctx, nil
}

func overloadedStatus() error {
	st, err := status.New(codes.ResourceExhausted, overloaded).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	if err != nil {
		return status.Error(codes.ResourceExhausted, overloaded)
	}
	return st.Err()
}

// rawCodec hands the trace service its messages as the bytes gRPC read,
// so that they are charged before being decoded, and writes responses
// already encoded. It serves only the receiver's own server.
type rawCodec struct{}

// wireMessage is a message as read.
type wireMessage struct{ b []byte }

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("otlp: cannot send %T", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(*wireMessage)
	if !ok {
		return fmt.Errorf("otlp: cannot read into %T", v)
	}
	m.b = data.Materialize()
	return nil
}

// RegisterGRPC registers the OTLP trace service on s, a server built with
// GRPCServerOptions.
func (r *Receiver) RegisterGRPC(s *grpc.Server) {
	s.RegisterService(&grpc.ServiceDesc{
		ServiceName: "opentelemetry.proto.collector.trace.v1.TraceService",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Export", Handler: exportHandler}},
		Metadata:    "opentelemetry/proto/collector/trace/v1/trace_service.proto",
	}, r)
}

// exportHandler serves Export. It takes a request slot of the gRPC
// budget before the message is read, and gives it back, with the bytes,
// when it returns: grpc-go runs at most MaxConcurrentStreams handlers a
// connection, so a connection holds at most that many slots, whatever it
// resets. A stream reset before its handler runs takes none. The
// interceptors (basic auth) run before the message is read: an
// unauthenticated stream's message never is.
func exportHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	r := srv.(*Receiver)
	if err := ctx.Err(); err != nil {
		r.noteReset(ctx, err)
		return nil, status.FromContextError(err).Err()
	}
	if !r.grpcLimit.acquire(0) {
		r.reject(TransportGRPC, RejectInflight)
		return nil, overloadedStatus()
	}
	var charged int64
	defer func() { r.grpcLimit.release(charged) }()
	handle := func(ctx context.Context, _ any) (any, error) {
		var m wireMessage
		if err := dec(&m); err != nil {
			if status.Code(err) == codes.Canceled {
				r.noteReset(ctx, context.Canceled)
			}
			return nil, err
		}
		if !r.grpcLimit.grow(int64(len(m.b))) {
			r.reject(TransportGRPC, RejectInflight)
			return nil, overloadedStatus()
		}
		charged = int64(len(m.b))
		er := ptraceotlp.NewExportRequest()
		if err := er.UnmarshalProto(m.b); err != nil {
			r.reject(TransportGRPC, RejectMalformed)
			return nil, status.Error(codes.InvalidArgument, "not an OTLP trace export: "+err.Error())
		}
		return response(r.Consume(peerOf(ctx), er.Traces())).MarshalProto()
	}
	if interceptor == nil {
		return handle(ctx, nil)
	}
	return interceptor(ctx, nil, &grpc.UnaryServerInfo{Server: srv, FullMethod: exportMethod}, handle)
}

// noteReset counts a stream its client cancelled (RST_STREAM) against its
// connection's reset rate.
func (r *Receiver) noteReset(ctx context.Context, err error) {
	if !errors.Is(err, context.Canceled) {
		return
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		r.guard.reset(p.Addr.String(), time.Now())
	}
}
