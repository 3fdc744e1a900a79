package wire

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
)

// The writing side of a stream: which type's request goes next, what it
// says, and what writing it records.

// sendLoop writes the dirty types' requests, and batching follows: each
// request carries all that is pending when it is built, and what changes
// meanwhile waits for the next. A single watch on an idle stream is
// written at once; a burst leaves in requests that grow with it, and the
// stream's flow control (gRPC's write quota, the peer's window) holds the
// writer back when the server reads slowly. No clock is involved.
func (s *stream) sendLoop() {
	defer s.cfg.Goroutines.Done()
	for {
		select {
		case <-s.wake:
		case <-s.ctx.Done():
			return
		}
		s.startAwaits()
		for typeURL, ok := s.takeDirty(); ok; typeURL, ok = s.takeDirty() {
			msg, replace := s.build(typeURL)
			if replace {
				s.cfg.Log.Info("xDS stream replaced: a wildcard subscription joined names written on it", "server", s.cfg.DecodeOptions.Server.URI, "type", typeURL)
				s.end(ErrNewStream)
				return
			}
			if s.stopped.Load() {
				return
			}
			if msg == nil {
				continue
			}
			head, names, err := s.marshalRequest(msg)
			if err != nil {
				s.cfg.Log.Error("xDS request marshal", "error", err)
				continue
			}
			if err := s.send(head, names); err != nil {
				// Recv reports the stream's status; nothing to add here.
				return
			}
			if s.cfg.Log.Enabled(context.Background(), slog.LevelDebug) {
				s.cfg.Log.Debug("xDS request sent", "server", s.cfg.DecodeOptions.Server.URI, "request", requestSummary{msg})
			}
			s.mu.Lock()
			st := s.typeLocked(typeURL)
			s.startTimersLocked(typeURL, st)
			s.askedLocked(st)
			s.mu.Unlock()
		}
	}
}

// takeDirty takes the first dirty type, in type URL order.
func (s *stream) takeDirty() (string, bool) {
	s.dirtyMu.Lock()
	defer s.dirtyMu.Unlock()
	if len(s.dirty) == 0 {
		return "", false
	}
	first := ""
	for t := range s.dirty {
		if first == "" || t < first {
			first = t
		}
	}
	delete(s.dirty, first)
	return first, true
}

// build asks the host for the type's subscription and builds the request
// the variant makes of it, or returns nil; replace says that it cannot be
// written on this stream (ErrNewStream).
func (s *stream) build(typeURL string) (msg proto.Message, replace bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.typeLocked(typeURL)
	if st.applying {
		// Its last part marks it dirty again.
		return nil, false
	}
	sub := s.host.Subscription(typeURL)
	if s.stopped.Load() {
		// Unsubscribing what nobody watches any more released the server.
		return nil, false
	}
	msg = s.v.request(s, st, typeURL, sub)
	if s.replace {
		return nil, true
	}
	if msg != nil && !s.sentNode {
		setNode(msg, s.cfg.Node)
		s.sentNode = true
	}
	return msg, false
}

// trackLocked records a subscription as written: new names get a timer
// that starts once the request is written, removed names lose theirs.
// It runs before the write: a response may be processed before the
// writer learns its write is done.
func (s *stream) trackLocked(st *typeState, sub Subscription) {
	for _, name := range sub.Removed {
		st.unsubscribe(name)
		st.forget = append(st.forget, name)
	}
	if len(sub.Added) > 0 || len(sub.Removed) > 0 {
		// The next response answers the change, whatever it says.
		st.changes++
		st.clean = false
		st.asking = st.asking || len(sub.Added) > 0
	}
	st.fresh = slices.Grow(st.fresh[:0], len(sub.Added)) // a burst's list, made once
	st.timeout = sub.Timeout
	if n := len(sub.Added); n > len(st.spare) {
		st.spare = make([]subscription, n)
		// A burst of watches adds most of its names at once: the map is
		// sized for them, rather than grown step by step.
		if want := len(st.subs) + n; want > 2*len(st.subs)+64 {
			grown := make(map[string]*subscription, want)
			maps.Copy(grown, st.subs)
			st.subs = grown
		}
	}
	awaited := sub.Awaited
	for _, name := range sub.Added {
		wait := len(awaited) > 0 && awaited[0] == name
		if wait {
			awaited = awaited[1:]
		}
		st.subscribe(name, wait)
	}
	st.last = sub.Names
}

// sameSlice reports whether a and b are the same slice (the same array,
// the same length), which makes a comparison of their elements needless.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
