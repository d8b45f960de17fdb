package otlp

import (
	"net"
	"testing"
	"time"
)

// A connection is closed on its 101st reset within one second, not
// before; resets spread over seconds never close it; an address with no
// connection is ignored.
func TestResetGuardWindow(t *testing.T) {
	var g resetGuard
	g.conns = map[string]*guardedConn{}
	a, b := net.Pipe()
	defer b.Close()
	gc := &guardedConn{Conn: a, g: &g}
	g.conns["peer"] = gc
	t0 := time.Unix(1000, 0)
	for i := range MaxResetsPerSecond {
		g.reset("peer", t0.Add(time.Duration(i)*time.Millisecond))
	}
	if g.closed.Load() != 0 || g.conns["peer"] == nil {
		t.Fatalf("closed after %d resets in a second", MaxResetsPerSecond)
	}
	// A second later the window starts again.
	for i := range MaxResetsPerSecond {
		g.reset("peer", t0.Add(time.Second+time.Duration(i)*time.Millisecond))
	}
	if g.closed.Load() != 0 {
		t.Fatalf("closed by resets spread over two seconds")
	}
	g.reset("peer", t0.Add(time.Second+500*time.Millisecond))
	if g.closed.Load() != 1 || g.conns["peer"] != nil {
		t.Fatalf("not closed on reset %d within a second", MaxResetsPerSecond+1)
	}
	if _, err := a.Write([]byte("x")); err == nil {
		t.Error("the connection still writes after it was closed")
	}
	g.reset("nobody", t0)
	if g.closed.Load() != 1 {
		t.Error("a reset of an unknown address closed something")
	}
}
