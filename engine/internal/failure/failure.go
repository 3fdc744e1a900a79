// Package failure is what a cache entry keeps when it is not plainly
// ACKED (gRFC A88 holds the resource in use and the last error
// independently): why it is not (its last error, with the failed
// update's version and time), the last ambient error its watchers were
// given (a new watcher sees it after the cached resource), and whether
// its resource came from the last-known-good store rather than a server.
// Most entries never fail: they hold a nil *Record, which every method
// takes, and carry none of its fields.
package failure

import (
	"time"

	"github.com/xdsengine/xdsengine/engine/internal/keep"
)

// Record is an entry's failure; E is the engine's error type.
type Record[E comparable] struct {
	Err           E
	FailedVersion string
	FailedAt      time.Time
	Ambient       error
	Stored        *keep.Stored // where a resource served from the store came from
	ServedSince   time.Time
}

// LastError returns why the entry is not ACKED; the zero E if nothing
// says so.
func (r *Record[E]) LastError() E {
	if r == nil {
		var none E
		return none
	}
	return r.Err
}

// AmbientError returns the last ambient error the watchers were given,
// or nil.
func (r *Record[E]) AmbientError() error {
	if r == nil {
		return nil
	}
	return r.Ambient
}

// FromStore returns where a resource served from the store came from, or
// nil.
func (r *Record[E]) FromStore() *keep.Stored {
	if r == nil {
		return nil
	}
	return r.Stored
}

// WithError returns r, made if nil, with the error of an update of
// version at a time.
func (r *Record[E]) WithError(err E, version string, at time.Time) *Record[E] {
	if r == nil {
		r = &Record[E]{}
	}
	r.Err, r.FailedVersion, r.FailedAt = err, version, at
	return r
}

// WithStored returns r, made if nil, with the store's resource it
// serves since a time.
func (r *Record[E]) WithStored(s *keep.Stored, since time.Time) *Record[E] {
	if r == nil {
		r = &Record[E]{}
	}
	r.Stored, r.ServedSince = s, since
	return r
}

// WithAmbient returns r with the ambient error the watchers were given;
// nil clears it, and a record left with nothing to say is dropped (nil).
func (r *Record[E]) WithAmbient(err error) *Record[E] {
	switch {
	case err != nil:
		if r == nil {
			r = &Record[E]{}
		}
		r.Ambient = err
	case r != nil:
		r.Ambient = nil
		if *r == (Record[E]{}) {
			return nil
		}
	}
	return r
}
