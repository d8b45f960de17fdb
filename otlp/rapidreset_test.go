package otlp

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// rapidReset opens Export streams on addr and resets each at once
// (CVE-2023-44487), over a fresh connection whenever the server closes
// one, until ctx ends, counting the streams it opened in n.
func rapidReset(ctx context.Context, addr string, n *atomic.Int64) {
	for ctx.Err() == nil {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			continue
		}
		stop := context.AfterFunc(ctx, func() { conn.Close() })
		go io.Copy(io.Discard, conn) // the server's answers, unread
		w := bufio.NewWriter(conn)
		w.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(w, nil)
		fr.WriteSettings()
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for id := uint32(1); id < 1<<30 && ctx.Err() == nil; id += 2 {
			block.Reset()
			for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", exportMethod}, {":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}) != nil ||
				fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				break
			}
			if n.Add(1)%64 == 0 && w.Flush() != nil {
				break
			}
		}
		stop()
		conn.Close()
	}
}

// HTTP/2 rapid reset against the gRPC port, from 4 connections at once,
// while legitimate exports are sent over gRPC and HTTP one after another:
// every legitimate export is accepted and folded. The attacker's streams
// never send a message, so they hold no bytes, and at most one request
// slot a connection (the per-connection stream cap), 4 of the 8; a
// connection that resets more than MaxResetsPerSecond streams a second is
// closed (the attacker reconnects); HTTP has a budget of its own. Before, each attacking stream was charged the 4 MiB it might send from
// the budget HTTP shared, and HTTP exports were answered 429.
func TestRapidResetLeavesExportsAccepted(t *testing.T) {
	s := &sink{}
	r := New(Options{Sink: s})
	ls, err := Listen("127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := ls.Serve(ctx, r, "", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); ls.Shutdown() }()
	grpcAddr, httpAddr := ls.grpc.Addr().String(), ls.http.Addr().String()

	attack, stopAttack := context.WithTimeout(ctx, 20*time.Second) // a bound, if the exports hang
	defer stopAttack()
	var opened atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rapidReset(attack, grpcAddr, &opened)
		}()
	}
	// Let the attack start before the first export.
	for opened.Load() == 0 && attack.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)

	const exports = 40
	cc, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := ptraceotlp.NewGRPCClient(cc)
	var grpcErrs, httpErrs []string
	var legit sync.WaitGroup
	legit.Add(2)
	var grpcTook, httpTook time.Duration
	go func() {
		defer legit.Done()
		start := time.Now()
		defer func() { grpcTook = time.Since(start) }()
		for range exports {
			call, done := context.WithTimeout(ctx, 10*time.Second)
			if _, err := client.Export(call, ptraceotlp.NewExportRequestFromTraces(traces("vllm", good("m")))); err != nil {
				grpcErrs = append(grpcErrs, err.Error())
			}
			done()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() {
		defer legit.Done()
		start := time.Now()
		defer func() { httpTook = time.Since(start) }()
		hc := &http.Client{Timeout: 10 * time.Second}
		for range exports {
			body, _ := ptraceotlp.NewExportRequestFromTraces(traces("vllm", good("m"))).MarshalProto()
			resp, err := hc.Post("http://"+httpAddr+"/v1/traces", ctProto, bytes.NewReader(body))
			if err != nil {
				httpErrs = append(httpErrs, err.Error())
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				httpErrs = append(httpErrs, resp.Status)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	legit.Wait()
	stillAttacking := attack.Err() == nil
	stopAttack()
	wg.Wait()
	t.Logf("%d streams written (opened and reset) by the attacker during %d exports on each transport (gRPC %v, HTTP %v)", opened.Load(), exports, grpcTook, httpTook)
	t.Logf("%d attacking connections closed for resetting more than %d streams a second", r.ResetFloodClosed(), MaxResetsPerSecond)
	if r.ResetFloodClosed() == 0 {
		t.Errorf("no attacking connection was closed")
	}
	if !stillAttacking {
		t.Errorf("the exports outlasted the attack's 20 s bound")
	}
	if len(grpcErrs) > 0 || len(httpErrs) > 0 {
		t.Errorf("legitimate exports refused during the attack: gRPC %d of %d %q, HTTP %d of %d %q", len(grpcErrs), exports, first(grpcErrs), len(httpErrs), exports, first(httpErrs))
	}
	s.mu.Lock()
	folded := len(s.reqs)
	s.mu.Unlock()
	if want := 2*exports - len(grpcErrs) - len(httpErrs); folded != want {
		t.Errorf("%d spans folded, want %d (one a successful export)", folded, want)
	}
	// Every charge comes back once the attack ends (a bound for a loaded
	// machine: a connection's reset streams are processed only as its
	// handlers get the CPU to finish).
	deadline := time.Now().Add(60 * time.Second)
	for {
		reqs, bytes := r.Inflight()
		if reqs == 0 && bytes == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("charges not given back after the attack: %d requests, %d bytes", reqs, bytes)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
