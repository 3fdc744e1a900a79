package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// ResourceWatcher receives the updates of one watched resource (gRFC A88).
//
// The engine calls watchers one at a time, on one goroutine per engine,
// with no lock held, so a callback may call Watch and cancel functions.
// Each call passes done, to be called exactly once, possibly after
// returning: the server's next response is read once every watcher
// notified of the last has called done (flow control).
type ResourceWatcher interface {
	// OnResourceChanged delivers a new resource or an error. Exactly one
	// of r and err is non-nil. An error after a valid resource means:
	// stop using the resource.
	OnResourceChanged(r registry.Resource, err error, done func())
	// OnAmbientError reports an error that leaves the last resource in
	// use: the server is unreachable, an update was NACKed, and so on. A
	// nil err clears the condition.
	OnAmbientError(err error, done func())
}

// WatcherFuncs adapts functions to a ResourceWatcher. A nil field just
// calls done.
type WatcherFuncs struct {
	ResourceChanged func(r registry.Resource, err error, done func())
	AmbientError    func(err error, done func())
}

// OnResourceChanged calls ResourceChanged.
func (w WatcherFuncs) OnResourceChanged(r registry.Resource, err error, done func()) {
	TypedWatcherFuncs[registry.Resource](w).OnResourceChanged(r, err, done)
}

// OnAmbientError calls AmbientError.
func (w WatcherFuncs) OnAmbientError(err error, done func()) {
	TypedWatcherFuncs[registry.Resource](w).OnAmbientError(err, done)
}

// Source is anything resources can be watched from: an *Engine, a *Mux,
// a *Pool's engine or a user's own composition.
type Source interface {
	// Watch starts watching a resource. cancel stops it; it is idempotent
	// and may be called from a callback. No callback of w starts after
	// cancel returns.
	Watch(typeURL, name string, w ResourceWatcher) (cancel func())
	// Registry returns the resource types the source serves, whose
	// dependencies a consumer such as the dependency-graph watch follows.
	Registry() *registry.Registry
}

// NewSource makes a Source of a registry and a watch function: for
// sources other than an Engine, such as a composition's or a test's.
func NewSource(reg *registry.Registry, watch func(typeURL, name string, w ResourceWatcher) (cancel func())) Source {
	return funcSource{reg: reg, watch: watch}
}

type funcSource struct {
	reg   *registry.Registry
	watch func(typeURL, name string, w ResourceWatcher) (cancel func())
}

func (s funcSource) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	return s.watch(typeURL, name, w)
}

func (s funcSource) Registry() *registry.Registry { return s.reg }

// TypedWatcher is a ResourceWatcher for resources of Go type T.
type TypedWatcher[T any] interface {
	OnResourceChanged(r T, err error, done func())
	OnAmbientError(err error, done func())
}

// TypedWatcherFuncs adapts functions to a TypedWatcher. A nil field just
// calls done.
type TypedWatcherFuncs[T any] struct {
	ResourceChanged func(r T, err error, done func())
	AmbientError    func(err error, done func())
}

// OnResourceChanged calls ResourceChanged.
func (w TypedWatcherFuncs[T]) OnResourceChanged(r T, err error, done func()) {
	if w.ResourceChanged == nil {
		done()
		return
	}
	w.ResourceChanged(r, err, done)
}

// OnAmbientError calls AmbientError.
func (w TypedWatcherFuncs[T]) OnAmbientError(err error, done func()) {
	if w.AmbientError == nil {
		done()
		return
	}
	w.AmbientError(err, done)
}

// Watch watches a resource whose decoded form is T. A resource of another
// Go type reaches w as a KindUnknownType error.
func Watch[T any](src Source, typeURL, name string, w TypedWatcher[T]) (cancel func()) {
	return src.Watch(typeURL, name, typedWatcher[T]{typeURL: typeURL, name: name, w: w})
}

type typedWatcher[T any] struct {
	typeURL, name string
	w             TypedWatcher[T]
}

func (t typedWatcher[T]) OnResourceChanged(r registry.Resource, err error, done func()) {
	t.OnUpdate(Update{Resource: r, Err: err}, done)
}

func (t typedWatcher[T]) OnAmbientError(err error, done func()) { t.w.OnAmbientError(err, done) }

// Mux routes each watch to one of several sources, so that one Source can
// front engines on different management servers. Route returning nil
// fails the watch with a KindUnroutable error.
type Mux struct {
	// Types are the resource types the sources serve together (Registry).
	Types *registry.Registry
	Route func(typeURL, name string) Source
}

// Registry returns m.Types.
func (m *Mux) Registry() *registry.Registry { return m.Types }

// Watch routes the watch.
func (m *Mux) Watch(typeURL, name string, w ResourceWatcher) (cancel func()) {
	var src Source
	if m.Route != nil {
		src = m.Route(typeURL, name)
	}
	if src == nil {
		deliverChange(w, Update{Err: &Error{
			Kind: KindUnroutable, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			Err: fmt.Errorf("no source routes this resource"),
		}, Received: time.Now()}, func() {})
		return func() {}
	}
	return src.Watch(typeURL, name, w)
}

// Interface guards.
var (
	_ Source          = (*Mux)(nil)
	_ Source          = funcSource{}
	_ Source          = (*Engine)(nil)
	_ ResourceWatcher = WatcherFuncs{}
)

// Update is one delivery to a watcher, with where it came from.
type Update struct {
	// Resource and Err are what OnResourceChanged receives: exactly one
	// is non-nil.
	Resource registry.Resource
	Err      error
	// Version is the version_info of the response that carried Resource
	// or caused Err ("" when none did: a does-not-exist timer, a lost
	// server).
	Version string
	// Server is the bootstrap entry (of those sharing a URI, the one
	// used) of the server that sent Resource or caused Err, zero when none
	// did: the server a "self" config source in the resource means, such
	// as a Cluster's lrs_server (package lrs).
	Server bootstrap.ServerConfig
	// Received is when the engine received Resource, or learned of Err,
	// on Config.Clock.
	Received time.Time
	// FromStore says that Resource comes from the last-known-good store
	// (Config.Store), kept from an earlier run, because no server of its
	// authority has answered; Version, Server and Received are then the
	// kept ones. An ambient error follows it, until a server answers.
	FromStore bool
}

// UpdateWatcher is an optional interface of a [ResourceWatcher]: the
// engine calls OnUpdate, with the update's version, server and time, in
// place of OnResourceChanged. Ambient errors still go to OnAmbientError.
type UpdateWatcher interface {
	ResourceWatcher
	OnUpdate(u Update, done func())
}

// TypedUpdate is an [Update] whose resource is of Go type T.
type TypedUpdate[T any] struct {
	Resource  T
	Err       error
	Version   string
	Server    bootstrap.ServerConfig
	Received  time.Time
	FromStore bool
}

// TypedUpdateWatcher is the optional interface of a [TypedWatcher] that
// wants each update's version, server and time: [Watch] calls OnUpdate in
// place of OnResourceChanged.
type TypedUpdateWatcher[T any] interface {
	TypedWatcher[T]
	OnUpdate(u TypedUpdate[T], done func())
}

// deliverChange calls the watcher's OnUpdate if it has one, else
// OnResourceChanged.
func deliverChange(w ResourceWatcher, u Update, done func()) {
	if uw, ok := w.(UpdateWatcher); ok {
		uw.OnUpdate(u, done)
		return
	}
	w.OnResourceChanged(u.Resource, u.Err, done)
}

// OnUpdate converts the update to T for the TypedWatcher.
func (t typedWatcher[T]) OnUpdate(u Update, done func()) {
	tu := TypedUpdate[T]{Err: u.Err, Version: u.Version, Server: u.Server, Received: u.Received, FromStore: u.FromStore}
	if u.Err == nil {
		if v, ok := u.Resource.(T); ok {
			tu.Resource = v
		} else {
			tu.Err = &Error{Kind: KindUnknownType, Code: codes.FailedPrecondition, TypeURL: t.typeURL, Name: t.name,
				Err: fmt.Errorf("decoded resource is %T, watcher wants %T", u.Resource, tu.Resource)}
		}
	}
	if uw, ok := t.w.(TypedUpdateWatcher[T]); ok {
		uw.OnUpdate(tu, done)
		return
	}
	t.w.OnResourceChanged(tu.Resource, tu.Err, done)
}

// Kind classifies an error a watcher sees.
type Kind int

const (
	// KindUnknown is the kind of an error that is not an *Error.
	KindUnknown Kind = iota
	// KindConnectivity: the server is unreachable or the ADS stream
	// failed before any response (gRFC A57). Transient; UNAVAILABLE.
	KindConnectivity
	// KindNACK: the resource failed validation. Data; INVALID_ARGUMENT.
	KindNACK
	// KindDeleted: the server deleted the resource (left out of a SotW
	// LDS/CDS response, or removed incrementally). Data; NOT_FOUND.
	KindDeleted
	// KindDoesNotExist: the does-not-exist timer fired. NOT_FOUND.
	KindDoesNotExist
	// KindTimeout: the does-not-exist timer fired on a server with
	// resource_timer_is_transient_error. Transient; UNAVAILABLE.
	KindTimeout
	// KindServerReported: an xRFC TP3 error, with the server's code. Data
	// for NOT_FOUND and PERMISSION_DENIED, transient otherwise.
	KindServerReported
	// KindInvalidName: the resource name does not parse. INVALID_ARGUMENT.
	KindInvalidName
	// KindUnknownAuthority: an xdstp:// name's authority is not in the
	// bootstrap. FAILED_PRECONDITION.
	KindUnknownAuthority
	// KindUnknownType: the type URL is not registered (or is switched
	// off), or a resource is not a typed watcher's Go type. FAILED_PRECONDITION.
	KindUnknownType
	// KindUnroutable: a Mux has no source for it. FAILED_PRECONDITION.
	KindUnroutable
	// KindClosed: the engine was closed. UNAVAILABLE.
	KindClosed
	// KindDependency: a dependency graph cannot be resolved (a missing or
	// failed resource, or a cycle). The underlying error's code.
	KindDependency
	// KindResponseTooLarge: a response over Config.MaxResponseBytes could
	// not be read. Transient; RESOURCE_EXHAUSTED.
	KindResponseTooLarge
)

var kindNames = [...]string{
	KindUnknown:          "unknown",
	KindConnectivity:     "connectivity",
	KindNACK:             "NACK",
	KindDeleted:          "deleted",
	KindDoesNotExist:     "does not exist",
	KindTimeout:          "timeout",
	KindServerReported:   "server reported",
	KindInvalidName:      "invalid name",
	KindUnknownAuthority: "unknown authority",
	KindUnknownType:      "unknown type",
	KindUnroutable:       "unroutable",
	KindClosed:           "closed",
	KindDependency:       "dependency",
	KindResponseTooLarge: "response too large",
}

// String returns the kind's name, for logs.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is every error the engine gives a watcher. It carries a gRPC
// status code, so status.Code(err) works, and its message ends with the
// node ID, as gRPC's does, to tell the reader which client it is.
type Error struct {
	Kind      Kind
	Code      codes.Code
	TypeURL   string                  // resource type, if the error is about one resource
	Name      string                  // resource name, likewise
	ServerURI string                  // the xDS server involved, if any
	server    *bootstrap.ServerConfig // its bootstrap entry, for Update.Server
	NodeID    string
	Err       error // the cause
}

// Error formats as "<what>: <cause> (xDS server <uri>) (node ID: <id>)".
func (e *Error) Error() string {
	var b strings.Builder
	if e.TypeURL != "" || e.Name != "" {
		fmt.Fprintf(&b, "%s resource %q: ", registry.ResourceType{TypeURL: e.TypeURL}.ShortName(), e.Name)
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Kind.String())
	}
	if e.ServerURI != "" {
		fmt.Fprintf(&b, " (xDS server %s)", e.ServerURI)
	}
	fmt.Fprintf(&b, " (node ID: %s)", e.NodeID)
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// GRPCStatus makes status.Code and status.FromError work on the error.
func (e *Error) GRPCStatus() *status.Status { return status.New(e.Code, e.Error()) }

// Class tells whether the error is a data error or a transient one (A88).
func (e *Error) Class() features.ErrorClass {
	switch e.Kind {
	case KindNACK, KindDeleted, KindDoesNotExist:
		return features.DataError
	case KindServerReported:
		if e.Code == codes.NotFound || e.Code == codes.PermissionDenied {
			return features.DataError
		}
	}
	return features.TransientError
}

// KindOf returns the Kind of the first *Error in err's chain.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindUnknown
}

// ErrClosed is the cause of errors about a closed engine.
var ErrClosed = errors.New("xDS engine closed")
