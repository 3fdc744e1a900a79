package tcpproxy_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/internal/testutil/tcpproxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startEcho starts a TCP server that greets each connection with its name
// and a newline, then echoes what it reads until EOF, then closes. The
// greeting tells which server a connection reached.
func startEcho(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				if _, err := io.WriteString(c, name+"\n"); err != nil {
					return
				}
				io.Copy(c, c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// dialEcho connects to addr and checks the greeting.
func dialEcho(t *testing.T, addr, wantName string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("reading greeting: %v", err)
	}
	if got := line[:len(line)-1]; got != wantName {
		t.Fatalf("greeted by %q, want %q", got, wantName)
	}
	return c, r
}

func echo(t *testing.T, c net.Conn, r *bufio.Reader, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("echo = %q, want %q", buf, msg)
	}
}

// expectClosed checks that the peer closes c without sending anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read = %d, %v; want the connection closed", n, err)
	}
}

// waitConns waits for the proxy's count of connections to reach want: the
// proxy updates it in its own goroutines.
func waitConns(t *testing.T, p *tcpproxy.Proxy, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Conns() != want {
		if time.Now().After(deadline) {
			t.Fatalf("Conns() = %d, want %d", p.Conns(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestForwarding(t *testing.T) {
	tests := []struct {
		name  string
		conns int
		msgs  []string
	}{
		{name: "one connection", conns: 1, msgs: []string{"hello"}},
		{name: "several connections", conns: 3, msgs: []string{"a", "bb", "ccc"}},
		{name: "large message", conns: 1, msgs: []string{string(make([]byte, 1<<20))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := tcpproxy.Start(t, startEcho(t, "echo"))
			type conn struct {
				c net.Conn
				r *bufio.Reader
			}
			var cs []conn
			for range tc.conns {
				c, r := dialEcho(t, p.Addr(), "echo")
				cs = append(cs, conn{c, r})
			}
			waitConns(t, p, tc.conns)
			for _, c := range cs {
				for _, m := range tc.msgs {
					echo(t, c.c, c.r, m)
				}
			}
			for _, c := range cs {
				c.c.Close()
			}
			waitConns(t, p, 0)
		})
	}
}

func TestHalfClose(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	c, r := dialEcho(t, p.Addr(), "echo")
	if _, err := io.WriteString(c, "last words"); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	// The echo server sees EOF only if the proxy passed the half-close on;
	// it then closes, and the proxy passes that on too.
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if string(rest) != "last words" {
		t.Errorf("read %q, want %q", rest, "last words")
	}
	waitConns(t, p, 0)
}

func TestCutRestore(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	addr := p.Addr()
	c, r := dialEcho(t, addr, "echo")
	echo(t, c, r, "before")

	p.Cut()
	expectClosed(t, c)
	if n := p.Conns(); n != 0 {
		t.Errorf("Conns() after Cut = %d, want 0", n)
	}
	// While cut, connecting succeeds (the port is still ours) but the
	// connection is closed at once.
	for range 3 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial while cut: %v", err)
		}
		expectClosed(t, nc)
		nc.Close()
	}

	p.Restore()
	if p.Addr() != addr {
		t.Errorf("Addr changed from %s to %s", addr, p.Addr())
	}
	c2, r2 := dialEcho(t, addr, "echo")
	echo(t, c2, r2, "after")
}

func TestSetTarget(t *testing.T) {
	a, b := startEcho(t, "a"), startEcho(t, "b")
	p := tcpproxy.Start(t, a)
	ca, ra := dialEcho(t, p.Addr(), "a")
	p.SetTarget(b)
	dialEcho(t, p.Addr(), "b")
	// The open connection keeps its target.
	echo(t, ca, ra, "still a")
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	p := tcpproxy.Start(t, down)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	expectClosed(t, c)
	waitConns(t, p, 0)
}

func TestClose(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	c, _ := dialEcho(t, p.Addr(), "echo")
	p.Close()
	p.Close() // idempotent; Cleanup calls it a third time
	expectClosed(t, c)
	if nc, err := net.Dial("tcp", p.Addr()); err == nil {
		nc.Close()
		t.Error("dial after Close succeeded")
	}
}

// TestGRPC is the use the proxy exists for: a gRPC client loses its server
// when the proxy is cut, and gets it back when restored.
func TestGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(ln) })
	defer wg.Wait()
	defer srv.Stop()

	p := tcpproxy.Start(t, ln.Addr().String())
	cc, err := grpc.NewClient(p.Addr(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Reconnect quickly so that Restore takes effect within the test.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 50 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)
	check := func(opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, opts...)
		return err
	}

	if err := check(); err != nil {
		t.Fatalf("Check through the proxy: %v", err)
	}
	waitConns(t, p, 1)

	p.Cut()
	if err := check(); status.Code(err) != codes.Unavailable {
		t.Fatalf("Check while cut = %v, want code Unavailable", err)
	}
	waitConns(t, p, 0)

	p.Restore()
	if err := check(grpc.WaitForReady(true)); err != nil {
		t.Fatalf("Check after Restore: %v", err)
	}
}

// TestPauseResume: while paused, nothing moves but nothing breaks; after
// Resume, what waited arrives in order.
func TestPauseResume(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	c, r := dialEcho(t, p.Addr(), "echo")
	p.Pause()
	p.Pause() // idempotent
	if _, err := io.WriteString(c, "held"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read while paused = %d, %v; want a timeout", n, err)
	}
	// A connection made while paused is accepted and dialled, and waits
	// too: its greeting arrives only after Resume.
	nc, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	waitConns(t, p, 2)
	p.Resume()
	p.Resume() // idempotent
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after Resume read %q, %v; want %q", buf, err, "held")
	}
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	greeting, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil || greeting != "echo\n" {
		t.Fatalf("greeting after Resume = %q, %v", greeting, err)
	}
	echo(t, c, r, "flowing")
}

// TestCutWhilePaused: a paused connection is still cut at once, and Close
// does not wait for Resume.
func TestCutWhilePaused(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	c, _ := dialEcho(t, p.Addr(), "echo")
	p.Pause()
	if _, err := io.WriteString(c, "stuck"); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	expectClosed(t, c)
	waitConns(t, p, 0)
	p.Restore()
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	waitConns(t, p, 1)
	done := make(chan struct{})
	go func() {
		p.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a paused connection")
	}
}

// TestDelay: each chunk arrives no sooner than the delay; zero removes it.
func TestDelay(t *testing.T) {
	p := tcpproxy.Start(t, startEcho(t, "echo"))
	c, r := dialEcho(t, p.Addr(), "echo")
	const d = 50 * time.Millisecond
	p.SetDelay(d)
	start := time.Now()
	echo(t, c, r, "slow")
	// One chunk each way.
	if got := time.Since(start); got < 2*d {
		t.Errorf("round trip took %v with a delay of %v each way", got, d)
	}
	p.SetDelay(0)
	echo(t, c, r, "fast")
}
