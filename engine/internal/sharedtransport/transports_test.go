package sharedtransport

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/transport"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counted is a transport that counts its Close calls; the set under test
// never opens a stream.
type counted struct{ closes atomic.Int32 }

func (*counted) NewStream(context.Context, string) (transport.Stream, error) {
	return nil, errors.New("not used")
}
func (c *counted) Close() error { c.closes.Add(1); return nil }

// builder builds a counted transport per call, or fails for "bad" URIs.
type builder struct {
	calls int
	built []*counted
}

func (b *builder) Build(s bootstrap.ServerConfig, _ transport.Options) (transport.Transport, error) {
	b.calls++
	if s.URI == "bad" {
		return nil, errors.New("cannot build")
	}
	t := &counted{}
	b.built = append(b.built, t)
	return t, nil
}

func TestKey(t *testing.T) {
	base := bootstrap.ServerConfig{URI: "xds.example.com:443", ChannelCreds: []bootstrap.ChannelCreds{{Type: "insecure"}}}
	for _, tc := range []struct {
		name  string
		other func(s bootstrap.ServerConfig) bootstrap.ServerConfig
		same  bool
	}{
		{"equal entry", func(s bootstrap.ServerConfig) bootstrap.ServerConfig { return s }, true},
		{"other URI", func(s bootstrap.ServerConfig) bootstrap.ServerConfig { s.URI += "x"; return s }, false},
		{"other channel creds", func(s bootstrap.ServerConfig) bootstrap.ServerConfig {
			s.ChannelCreds = []bootstrap.ChannelCreds{{Type: "tls", Config: []byte(`{}`)}}
			return s
		}, false},
		{"call creds", func(s bootstrap.ServerConfig) bootstrap.ServerConfig {
			s.CallCreds = []bootstrap.CallCreds{{Type: "jwt_token_file"}}
			return s
		}, false},
		{"delta", func(s bootstrap.ServerConfig) bootstrap.ServerConfig { s.Delta = true; return s }, false},
		{"a feature", func(s bootstrap.ServerConfig) bootstrap.ServerConfig {
			s.ServerFeatures = []string{"ignore_resource_deletion"}
			return s
		}, false},
	} {
		if got := Key(base) == Key(tc.other(base)); got != tc.same {
			t.Errorf("%s: same key = %v, want %v", tc.name, got, tc.same)
		}
	}
}

// TestSharing: users of one key share one transport, which its last
// Release closes; a failed build is reported to each user and shared
// too; Drain hands over what is still lent, and later Releases do
// nothing.
func TestSharing(t *testing.T) {
	var closing sync.WaitGroup
	b := &builder{}
	ts := New(b, transport.Options{}, slog.New(slog.DiscardHandler), &closing)
	s := bootstrap.ServerConfig{URI: "a"}
	t1, err1 := ts.Acquire(Key(s), s)
	t2, err2 := ts.Acquire(Key(s), s)
	if err1 != nil || err2 != nil || t1 != t2 || len(b.built) != 1 {
		t.Fatalf("two Acquires: %v, %v, %d built; want one transport shared", err1, err2, len(b.built))
	}
	ts.Release(Key(s))
	closing.Wait()
	if n := b.built[0].closes.Load(); n != 0 {
		t.Fatalf("closed %d times with a user left", n)
	}
	ts.Release(Key(s))
	closing.Wait()
	if n := b.built[0].closes.Load(); n != 1 {
		t.Fatalf("closed %d times after the last Release, want 1", n)
	}

	bad := bootstrap.ServerConfig{URI: "bad"}
	for range 2 {
		if tr, err := ts.Acquire(Key(bad), bad); tr != nil || err == nil {
			t.Fatalf("Acquire of an unbuildable server = %v, %v; want the build error", tr, err)
		}
	}
	if b.calls != 2 {
		t.Fatalf("%d builds for two servers, want 2", b.calls)
	}
	ts.Release(Key(bad))
	ts.Release(Key(bad))

	lent, _ := ts.Acquire(Key(s), s)
	closeAll := ts.Drain()
	if n := lent.(*counted).closes.Load(); n != 0 {
		t.Fatalf("Drain closed the lent transport %d times before its function was called", n)
	}
	ts.Release(Key(s))
	closing.Wait()
	if n := lent.(*counted).closes.Load(); n != 0 {
		t.Fatalf("a Release after Drain closed the transport %d times", n)
	}
	if err := closeAll(); err != nil || lent.(*counted).closes.Load() != 1 {
		t.Fatalf("Drain's function = %v, %d closes; want the lent transport closed once", err, lent.(*counted).closes.Load())
	}
}

// TestLend: a lent transport is shared with the set's other users; its
// release, idempotent, takes the lock and gives it back; a failed build
// lends nothing and holds nothing.
func TestLend(t *testing.T) {
	var closing sync.WaitGroup
	var mu sync.Mutex
	b := &builder{}
	ts := New(b, transport.Options{}, slog.New(slog.DiscardHandler), &closing)
	s := bootstrap.ServerConfig{URI: "a"}
	own, _ := ts.Acquire(Key(s), s)
	mu.Lock()
	lent, release, err := ts.Lend(s, &mu)
	mu.Unlock()
	if err != nil || lent != own {
		t.Fatalf("Lend = %v, %v; want the transport already in use", lent, err)
	}
	ts.Release(Key(s))
	release()
	release()
	closing.Wait()
	if n := b.built[0].closes.Load(); n != 1 {
		t.Fatalf("closed %d times after its users and the lent one were released (twice), want 1", n)
	}
	if !mu.TryLock() {
		t.Fatal("release left the lock held")
	}
	mu.Unlock()

	bad := bootstrap.ServerConfig{URI: "bad"}
	calls := b.calls
	if tr, release, err := ts.Lend(bad, &mu); tr != nil || release != nil || err == nil {
		t.Fatalf("Lend of an unbuildable server = %v, %v; want only the error", tr, err)
	}
	ts.Acquire(Key(bad), bad) // built again: the failed Lend holds nothing
	if b.calls != calls+2 {
		t.Fatalf("%d builds for a failed Lend and an Acquire after it, want 2", b.calls-calls)
	}
	ts.Release(Key(bad))
}

// opener records the method of each stream it opens; its streams answer
// every Recv with a message of size bytes.
type opener struct {
	counted
	methods []string
	size    int
	fail    error
}

type sized int

func (sized) Send([]byte) error       { return nil }
func (s sized) Recv() ([]byte, error) { return make([]byte, s), nil }

func (o *opener) NewStream(_ context.Context, method string) (transport.Stream, error) {
	o.methods = append(o.methods, method)
	if o.fail != nil {
		return nil, o.fail
	}
	return sized(o.size), nil
}

func TestOpen(t *testing.T) {
	failed := errors.New("unreachable")
	for _, tc := range []struct {
		name     string
		delta    bool
		size     int
		fail     error
		method   string
		tooLarge bool
	}{
		{name: "SotW", size: 10, method: transport.ADSMethod},
		{name: "delta", delta: true, size: 10, method: transport.DeltaADSMethod},
		{name: "a response over the limit", size: 11, method: transport.ADSMethod, tooLarge: true},
		{name: "the transport fails", delta: true, fail: failed, method: transport.DeltaADSMethod},
	} {
		o := &opener{size: tc.size, fail: tc.fail}
		st, err := Open(context.Background(), o, tc.delta, 10)
		if len(o.methods) != 1 || o.methods[0] != tc.method {
			t.Errorf("%s: opened %v, want %s", tc.name, o.methods, tc.method)
		}
		if tc.fail != nil {
			if !errors.Is(err, tc.fail) || st != nil {
				t.Errorf("%s: Open = %v, %v; want the transport's error", tc.name, st, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: Open: %v", tc.name, err)
		}
		_, err = st.Recv()
		var tooLarge *transport.ResponseTooLargeError
		if errors.As(err, &tooLarge) != tc.tooLarge {
			t.Errorf("%s: Recv of %d bytes with a limit of 10: %v, want too large: %v", tc.name, tc.size, err, tc.tooLarge)
		}
	}
}
