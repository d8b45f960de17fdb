package otlp

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxResetsPerSecond is how many streams a gRPC connection may have
// cancelled by its client in one second before the connection is closed.
// An OpenTelemetry exporter cancels an export only when it gives up on it
// (its timeout, 10 s by default); a client resetting streams as fast as it
// opens them (HTTP/2 rapid reset, CVE-2023-44487) does thousands a second.
// grpc-go has no such option; the receiver counts the cancellations its
// handlers see.
const MaxResetsPerSecond = 100

// resetGuard tracks the gRPC connections of one listener by the client's
// address, to close the ones that reset too fast.
type resetGuard struct {
	mu     sync.Mutex
	conns  map[string]*guardedConn
	closed atomic.Uint64 // connections closed for resetting
}

type guardedConn struct {
	net.Conn
	g      *resetGuard
	window time.Time
	resets int
}

// guardListener registers each accepted connection with the guard.
type guardListener struct {
	net.Listener
	g *resetGuard
}

func (l guardListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	gc := &guardedConn{Conn: c, g: l.g}
	l.g.mu.Lock()
	l.g.conns[c.RemoteAddr().String()] = gc
	l.g.mu.Unlock()
	return gc, nil
}

func (c *guardedConn) Close() error {
	c.g.mu.Lock()
	if c.g.conns[c.RemoteAddr().String()] == c {
		delete(c.g.conns, c.RemoteAddr().String())
	}
	c.g.mu.Unlock()
	return c.Conn.Close()
}

// reset notes a stream of the connection from addr cancelled by its
// client, and closes the connection past MaxResetsPerSecond.
func (g *resetGuard) reset(addr string, now time.Time) {
	g.mu.Lock()
	c := g.conns[addr]
	if c == nil {
		g.mu.Unlock()
		return
	}
	if now.Sub(c.window) >= time.Second {
		c.window, c.resets = now, 0
	}
	c.resets++
	flood := c.resets > MaxResetsPerSecond
	if flood {
		delete(g.conns, addr)
	}
	g.mu.Unlock()
	if flood {
		g.closed.Add(1)
		c.Conn.Close()
	}
}
