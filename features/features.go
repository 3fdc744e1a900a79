package features

import (
	"time"

	"google.golang.org/grpc/codes"
)

// ServerFeature is one entry of a server's "server_features" list.
type ServerFeature interface {
	// Name is the exact string that enables the feature in the bootstrap.
	Name() string
}

// ErrorClass tells data errors from transient errors, as gRFC A88 does.
type ErrorClass int

const (
	// TransientError: lost contact with the server, or an xRFC TP3 error
	// whose code is neither NOT_FOUND nor PERMISSION_DENIED.
	TransientError ErrorClass = iota
	// DataError: a NACKed resource, an LDS/CDS deletion, or an xRFC TP3
	// NOT_FOUND or PERMISSION_DENIED.
	DataError
)

// String returns the class's name, for logs.
func (c ErrorClass) String() string {
	if c == DataError {
		return "data error"
	}
	return "transient error"
}

// Reason says which event produced a data error.
type Reason int

const (
	// ReasonNACK: the resource failed validation and was NACKed.
	ReasonNACK Reason = iota + 1
	// ReasonDeletion: a SotW response of an all-resources-required type
	// (LDS, CDS) no longer contained the resource.
	ReasonDeletion
	// ReasonServerReported: the server sent an xRFC TP3 resource error.
	ReasonServerReported
)

// String returns the reason's name, for logs.
func (r Reason) String() string {
	switch r {
	case ReasonNACK:
		return "NACK"
	case ReasonDeletion:
		return "deletion"
	case ReasonServerReported:
		return "server-reported error"
	}
	return "unknown"
}

// ErrorEvent describes a data error for a resource the engine holds a
// cached, valid version of.
type ErrorEvent struct {
	Class   ErrorClass
	Reason  Reason
	Code    codes.Code // the gRPC status code watchers will see
	TypeURL string
	Name    string
	Err     error
}

// Action is what the engine does with a cached resource on a data error.
type Action int

const (
	// Keep the cached resource: watchers get OnAmbientError.
	Keep Action = iota
	// Drop the cached resource: watchers get OnResourceChanged with the
	// error, and the resource leaves the cache.
	Drop
)

// String returns the action's name, for logs.
func (a Action) String() string {
	if a == Drop {
		return "drop"
	}
	return "keep"
}

// ErrorPolicy is an optional hook: it decides whether a data error drops a
// cached resource. def is the decision so far.
type ErrorPolicy interface {
	ServerFeature
	ErrorAction(ev ErrorEvent, def Action) Action
}

// Timer is the does-not-exist timer's setting for a server.
type Timer struct {
	// Timeout is how long after the subscription is sent the engine waits
	// for an uncached resource.
	Timeout time.Duration
	// Transient makes an expiry a transient error (UNAVAILABLE, cache
	// state TIMEOUT) instead of a data error (NOT_FOUND, DOES_NOT_EXIST).
	Transient bool
}

// DefaultTimer is gRPC's does-not-exist timer: 15 s, then NOT_FOUND.
var DefaultTimer = Timer{Timeout: 15 * time.Second}

// TimerPolicy is an optional hook: it sets the does-not-exist timer. def is
// the setting so far.
type TimerPolicy interface {
	ServerFeature
	ResourceTimer(def Timer) Timer
}

// Set is a server's features in bootstrap order.
type Set []ServerFeature

// Has reports whether a feature of that name is in the set.
func (s Set) Has(name string) bool {
	for _, f := range s {
		if f.Name() == name {
			return true
		}
	}
	return false
}

// Names returns the feature names in order.
func (s Set) Names() []string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = f.Name()
	}
	return out
}

// ErrorAction folds every ErrorPolicy of the set over def, in order.
func (s Set) ErrorAction(ev ErrorEvent, def Action) Action {
	for _, f := range s {
		if p, ok := f.(ErrorPolicy); ok {
			def = p.ErrorAction(ev, def)
		}
	}
	return def
}

// ResourceTimer folds every TimerPolicy of the set over def, in order.
func (s Set) ResourceTimer(def Timer) Timer {
	for _, f := range s {
		if p, ok := f.(TimerPolicy); ok {
			def = p.ResourceTimer(def)
		}
	}
	return def
}

// Resolve turns bootstrap feature names into a Set, keeping their order.
// Each name is looked up in known; when several known features share a
// name the last one wins, so a caller appends its own features after
// [Builtin] to override a built-in. Unknown names are ignored, and a name
// listed twice is taken once.
func Resolve(names []string, known ...ServerFeature) Set {
	byName := make(map[string]ServerFeature, len(known))
	for _, f := range known {
		if f != nil {
			byName[f.Name()] = f
		}
	}
	var out Set
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		f, ok := byName[n]
		if !ok || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, f)
	}
	return out
}
