package xdstest

import (
	"net"
	"sync"
)

// gatedListener is a net.Listener that can refuse service without giving
// up its port.
//
// Stop closes every connection it handed out and closes each new one right
// after accepting it; Restart hands connections to the server again. The
// socket stays bound throughout, which is why the harness uses this rather
// than closing and re-listening: a free loopback port can be taken in the
// meantime by another test's listener or by an outgoing connection's
// ephemeral source port (even the reconnecting client's own, a TCP
// self-connect), and then Restart would fail or talk to the wrong peer.
//
// Unlike gRPC-Go's internal RestartableListener, Accept does not return an
// error while stopped: grpc.Server backs off on temporary Accept errors (5 ms
// doubling to 1 s), which would delay the first accept after Restart.
// Looping inside Accept keeps that delay at zero.
type gatedListener struct {
	net.Listener

	mu      sync.Mutex
	stopped bool
	conns   []net.Conn // handed out since the last stop
	refused int        // closed on arrival while stopped
}

func newGatedListener(l net.Listener) *gatedListener {
	return &gatedListener{Listener: l}
}

// Accept returns the next connection accepted while not stopped.
func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.stopped {
			l.refused++
			l.mu.Unlock()
			// The client sees the connection close before the server
			// preface: codes.Unavailable, as for a server that is down.
			c.Close()
			continue
		}
		l.conns = append(l.conns, c)
		l.mu.Unlock()
		return c, nil
	}
}

// stop closes all handed-out connections and refuses new ones. The server's
// transports see their connections fail, which cancels every stream.
func (l *gatedListener) stop() {
	l.mu.Lock()
	l.stopped = true
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		// Connections the server already closed return an error here.
		c.Close()
	}
}

// cut closes all handed-out connections, as a network failure would, and
// keeps accepting new ones.
func (l *gatedListener) cut() int {
	l.mu.Lock()
	conns := l.conns
	l.conns = nil
	l.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	return len(conns)
}

func (l *gatedListener) refusedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// restart hands new connections to the server again.
func (l *gatedListener) restart() {
	l.mu.Lock()
	l.stopped = false
	l.mu.Unlock()
}
