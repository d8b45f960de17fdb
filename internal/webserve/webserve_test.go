package webserve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// One address that cannot be opened fails the whole set, naming it, and
// leaves none of the others open.
func TestListenAllOrNone(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	_, err = ListenAll([]string{freeAddr, taken.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
		t.Fatalf("a taken port: %v", err)
	}
	// The first address was opened and must have been closed again.
	l, err := net.Listen("tcp", freeAddr)
	if err != nil {
		t.Fatalf("the first address was left open: %v", err)
	}
	l.Close()
}

// Serve answers on every listener until ctx ends, then returns nil and
// stops answering.
func TestServeUntilCancelled(t *testing.T) {
	ls, err := ListenAll([]string{"127.0.0.1:0", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "here") }), ReadHeaderTimeout: time.Second}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, ls, "", slog.New(slog.DiscardHandler)) }()
	for _, l := range ls {
		url := "http://" + l.Addr().String() + "/"
		var body []byte
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			resp, err := http.Get(url)
			if err == nil {
				body, _ = io.ReadAll(resp.Body)
				resp.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", url, err)
			}
		}
		if string(body) != "here" {
			t.Errorf("%s: %q", url, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve returned %v after its context ended", err)
	}
	if _, err := http.Get("http://" + ls[0].Addr().String() + "/"); err == nil {
		t.Error("still answering after its context ended")
	}
}
