package otlp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/goodput-exporter/goodput-exporter/goodput"
)

// holdSink holds the Folds of service "hold" until released and folds
// the others at once.
type holdSink struct {
	release chan struct{}
	held    atomic.Int64
	folded  atomic.Int64
}

type holdDest struct {
	s    *holdSink
	hold bool
}

func (s *holdSink) Match(res *Resource) (Dest, string) {
	return holdDest{s, res.ServiceName == "hold"}, ""
}

func (d holdDest) Fold(reqs []goodput.TracedRequest, _ func(string)) {
	if d.hold {
		d.s.held.Add(1)
		<-d.s.release
	}
	d.s.folded.Add(int64(len(reqs)))
}

// Each transport has a budget of its own: 16 HTTP bodies trickling in,
// holding every HTTP slot, leave a gRPC export accepted; 8 gRPC exports
// held in their Fold, holding every gRPC slot, leave an HTTP export
// accepted. With one budget for both, either flood refused the other
// transport's exports.
func TestTransportsDoNotStarveEachOther(t *testing.T) {
	s := &holdSink{release: make(chan struct{})}
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
	httpURL := "http://" + ls.http.Addr().String() + "/v1/traces"
	grpcExport := func(service string) error {
		cc, err := grpc.NewClient(ls.grpc.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		call, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		_, err = ptraceotlp.NewGRPCClient(cc).Export(call, ptraceotlp.NewExportRequestFromTraces(traces(service, good("m"))))
		return err
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	// HTTP: 16 bodies of 1 MB declared, 1 KB sent, the rest never.
	var pipes []*io.PipeWriter
	var trickling sync.WaitGroup
	for range DefaultMaxInflightRequests {
		pr, pw := io.Pipe()
		pipes = append(pipes, pw)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, httpURL, pr)
		req.ContentLength = 1_000_000
		req.Header.Set("Content-Type", ctProto)
		trickling.Add(1)
		go func() {
			defer trickling.Done()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		go pw.Write(make([]byte, 1024))
	}
	waitFor("16 HTTP bodies admitted", func() bool { n, _ := r.httpLimit.now(); return n == DefaultMaxInflightRequests })
	if err := grpcExport("vllm"); err != nil {
		t.Errorf("gRPC export while HTTP is full: %v", err)
	}
	for _, pw := range pipes {
		pw.CloseWithError(errors.New("sender gone"))
	}
	trickling.Wait()
	waitFor("the HTTP bodies given back", func() bool { n, _ := r.httpLimit.now(); return n == 0 })

	// gRPC: as many exports as it has slots, held in their Fold.
	slots := r.grpcLimit.maxReqs
	var holding sync.WaitGroup
	for range slots {
		holding.Add(1)
		go func() {
			defer holding.Done()
			if err := grpcExport("hold"); err != nil {
				t.Errorf("a held gRPC export: %v", err)
			}
		}()
	}
	waitFor("every gRPC slot held", func() bool { return s.held.Load() == int64(slots) })
	if n, _ := r.grpcLimit.now(); n != slots {
		t.Errorf("%d gRPC slots held, want %d", n, slots)
	}
	body, _ := ptraceotlp.NewExportRequestFromTraces(traces("vllm", good("m"))).MarshalProto()
	resp, err := http.Post(httpURL, ctProto, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP export while gRPC is full: %s", resp.Status)
	}
	close(s.release)
	holding.Wait()
	if got, want := s.folded.Load(), int64(2+slots); got != want {
		t.Errorf("%d spans folded, want %d", got, want)
	}
}
