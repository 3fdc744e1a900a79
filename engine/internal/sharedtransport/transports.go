// Package sharedtransport shares one transport per xDS server entry among its
// users: the engine's channel to the server and the clients of other
// services on it (load reporting to "self" rides the ADS connection), as
// gRPC keeps one connection per server entry.
package sharedtransport

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/transport"
)

// Key identifies a server entry for sharing: two authorities that list
// equal servers share one ADS stream and one transport.
func Key(s bootstrap.ServerConfig) string {
	var b strings.Builder
	b.WriteString(s.URI)
	for _, c := range s.ChannelCreds {
		b.WriteString("\x00c:" + c.Type + ":")
		b.Write(c.Config)
	}
	for _, c := range s.CallCreds {
		b.WriteString("\x00k:" + c.Type + ":")
		b.Write(c.Config)
	}
	if s.Delta {
		b.WriteString("\x00delta")
	}
	for _, f := range s.ServerFeatures {
		b.WriteString("\x00f:" + f)
	}
	return b.String()
}

// Set is the shared transports, by Key. Its user's lock guards it.
type Set struct {
	builder transport.Builder
	opts    transport.Options
	log     *slog.Logger
	closing *sync.WaitGroup
	shared  map[string]*shared
}

type shared struct {
	t    transport.Transport
	err  error // why it could not be built
	refs int
}

// New returns an empty set whose transports b builds with opts. closing
// counts the transports being closed in the background.
func New(b transport.Builder, opts transport.Options, log *slog.Logger, closing *sync.WaitGroup) *Set {
	return &Set{builder: b, opts: opts, log: log, closing: closing, shared: make(map[string]*shared)}
}

// Acquire returns the transport to s (whose Key is key), built on first
// use, or why it could not be built. Each Acquire, failed or not, is
// matched by a Release.
func (ts *Set) Acquire(key string, s bootstrap.ServerConfig) (transport.Transport, error) {
	st := ts.shared[key]
	if st == nil {
		st = &shared{}
		st.t, st.err = ts.builder.Build(s, ts.opts)
		if st.err != nil {
			ts.log.Error("xDS transport", "server", s.URI, "error", st.err)
		}
		ts.shared[key] = st
	}
	st.refs++
	return st.t, st.err
}

// Release gives a transport back. Its last user closes it, in the
// background: closing a gRPC connection can take a moment, and not under
// the user's lock.
func (ts *Set) Release(key string) {
	st := ts.shared[key]
	if st == nil {
		return // taken by Drain
	}
	if st.refs--; st.refs > 0 {
		return
	}
	delete(ts.shared, key)
	if st.t != nil {
		ts.closing.Add(1)
		go func() {
			defer ts.closing.Done()
			st.t.Close()
		}()
	}
}

// Lend acquires the transport to s for a user outside the engine (load
// reporting), and returns the function that gives it back, taking lock
// (the set's user's) to do so: idempotent, and callable at any time.
// Lend itself is called with lock held.
func (ts *Set) Lend(s bootstrap.ServerConfig, lock sync.Locker) (t transport.Transport, release func(), err error) {
	key := Key(s)
	t, err = ts.Acquire(key, s)
	if err != nil {
		ts.Release(key)
		return nil, nil, err
	}
	return t, sync.OnceFunc(func() {
		lock.Lock()
		defer lock.Unlock()
		ts.Release(key)
	}), nil
}

// Drain empties the set and returns the function that closes its
// transports, those still lent too, for the caller to call once it has
// let go of its lock; later Releases do nothing.
func (ts *Set) Drain() (closeAll func() error) {
	var lent []transport.Transport
	for key, st := range ts.shared {
		if st.t != nil {
			lent = append(lent, st.t)
		}
		delete(ts.shared, key)
	}
	return func() error {
		var errs []error
		for _, t := range lent {
			errs = append(errs, t.Close()) // Join drops nils
		}
		return errors.Join(errs...)
	}
}

// Open opens an ADS stream on t, incremental (delta) or State of the
// World, that reads no response larger than maxBytes.
func Open(ctx context.Context, t transport.Transport, delta bool, maxBytes int) (transport.Stream, error) {
	method := transport.ADSMethod
	if delta {
		method = transport.DeltaADSMethod
	}
	st, err := t.NewStream(ctx, method)
	if err != nil {
		return nil, err
	}
	return transport.LimitReceive(st, maxBytes), nil
}
