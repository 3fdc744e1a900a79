package tcpproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// dialTimeout bounds the dial to the target, so that a target that is down
// costs a test a closed connection, not a hang.
const dialTimeout = 5 * time.Second

// Proxy forwards each TCP connection accepted on its address to a target
// address. Its methods are safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	ctx    context.Context // done once Close starts, to abandon dials
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	mu     sync.Mutex
	target string
	cut    bool
	closed bool
	conns  map[*pair]struct{}
	// resumed is non-nil while the proxy is paused, and closed by Resume.
	resumed chan struct{}
	// delay is how long each chunk of bytes waits before it is forwarded.
	delay time.Duration
}

// pair is one proxied connection: the client's side and, once dialled, the
// target's side.
type pair struct {
	client net.Conn
	server net.Conn // nil while dialling
	closed bool
	// done is closed when the pair is closed, to wake a direction waiting
	// on Pause or SetDelay: a paused connection must still be cut at once.
	done      chan struct{}
	closeOnce sync.Once
}

// Start starts a proxy on 127.0.0.1 with a port chosen by the system, that
// forwards to target (host:port). The proxy is closed when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("tcpproxy: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		ln:     ln,
		ctx:    ctx,
		cancel: cancel,
		target: target,
		conns:  make(map[*pair]struct{}),
	}
	p.wg.Go(p.acceptLoop)
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's address (host:port), which stays the same for
// the proxy's whole life, across Cut and Restore.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// Cut closes every proxied connection, on both sides, and makes the proxy
// accept and immediately close new connections until Restore. The client
// thus sees its connection reset and its reconnection attempts fail, while
// the port stays the proxy's.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	pairs := p.takeAllLocked()
	p.mu.Unlock()
	for _, c := range pairs {
		c.close()
	}
}

// Restore undoes Cut: connections accepted from now on are forwarded again.
// Connections closed by Cut stay closed; clients must reconnect.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Pause stops forwarding bytes, in both directions, on every connection,
// open or new, until Resume. Connections stay open and new ones are
// accepted and dialled, so the client sees neither an error nor a closed
// connection, only silence: a stalled network path or a hung server. What
// is read meanwhile waits in the proxy (and, once the proxy stops reading,
// in the kernel's buffers) and goes through, in order, after Resume. Cut
// and Close still close paused connections at once.
func (p *Proxy) Pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed == nil {
		p.resumed = make(chan struct{})
	}
}

// Resume undoes Pause.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resumed != nil {
		close(p.resumed)
		p.resumed = nil
	}
}

// SetDelay makes every chunk of bytes read from either side, on every
// connection, wait d before it is forwarded: added latency (and, since
// each direction forwards one chunk at a time, less throughput), without
// reordering or errors. Zero removes the delay. It applies to chunks read
// from now on.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// SetTarget changes where connections accepted from now on are forwarded.
// Open connections keep their target, so a test that wants every client to
// move calls Cut and Restore around it.
func (p *Proxy) SetTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Conns returns how many connections are currently proxied: accepted, with
// the target dialled, and not yet closed by either side or by Cut.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.conns {
		if c.server != nil {
			n++
		}
	}
	return n
}

// Close stops the proxy: it closes the listener and every connection and
// returns once every goroutine the proxy started has ended. It may be
// called more than once.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	pairs := p.takeAllLocked()
	p.mu.Unlock()
	p.cancel()
	p.ln.Close()
	for _, c := range pairs {
		c.close()
	}
	p.wg.Wait()
}

// takeAllLocked removes every pair from the set and marks it closed, so
// that a dial still in flight for one of them drops its result.
func (p *Proxy) takeAllLocked() []*pair {
	pairs := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		c.closed = true
		pairs = append(pairs, c)
		delete(p.conns, c)
	}
	return pairs
}

func (p *pair) close() {
	p.closeOnce.Do(func() { close(p.done) })
	p.client.Close()
	if p.server != nil {
		p.server.Close()
	}
}

func (p *Proxy) acceptLoop() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures such as running out of file
			// descriptors: back off a little instead of spinning.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		if p.cut || p.closed {
			p.mu.Unlock()
			conn.Close()
			continue
		}
		c := &pair{client: conn, done: make(chan struct{})}
		p.conns[c] = struct{}{}
		target := p.target
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(c, target) })
	}
}

// serve dials target for c and copies bytes both ways until both
// directions have finished.
func (p *Proxy) serve(c *pair, target string) {
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(p.ctx, "tcp", target)
	p.mu.Lock()
	if err != nil || c.closed {
		// Cut or Close got to the pair while dialling and has closed the
		// client side already; the target side is ours to close.
		delete(p.conns, c)
		p.mu.Unlock()
		c.client.Close()
		if server != nil {
			server.Close()
		}
		return
	}
	c.server = server
	p.mu.Unlock()

	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(c, server, c.client) })
	p.pipe(c, c.client, server)
	wg.Wait()

	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.close()
}

// pipe copies src to dst, chunk by chunk, each chunk held by Pause and
// SetDelay. When src reaches EOF it half-closes dst, so that a peer that
// shuts down its writing side is seen as such at the other end; on any
// error, or when the pair is closed while a chunk waits, it closes the
// pair, since the connection is then broken.
func (p *Proxy) pipe(c *pair, dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(c) {
				c.close()
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				c.close()
				return
			}
		}
		if errors.Is(err, io.EOF) {
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			c.close()
			return
		}
		if err != nil {
			c.close()
			return
		}
	}
}

// hold waits while the proxy is paused, then for the delay. It reports
// false if the pair was closed meanwhile.
func (p *Proxy) hold(c *pair) bool {
	for {
		p.mu.Lock()
		resumed, delay := p.resumed, p.delay
		p.mu.Unlock()
		if resumed != nil {
			select {
			case <-resumed:
				// Paused again, or a delay set, while waiting: look again.
				continue
			case <-c.done:
				return false
			}
		}
		if delay <= 0 {
			return true
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
			return true
		case <-c.done:
			t.Stop()
			return false
		}
	}
}
