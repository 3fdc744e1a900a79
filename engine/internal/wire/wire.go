package wire

import (
	"context"
	"hash/maphash"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// Stream is one stream attempt to one server, as the engine drives it. A
// protocol variant (State of the World today, incremental beside it)
// implements it. Its Locked methods are called with Config.Lock held.
type Stream interface {
	// Start opens the stream in the background. Call it once.
	Start()
	// TypeChangedLocked tells the stream that the subscriptions of a type
	// may have changed: the stream writes the type's current state when
	// it can.
	TypeChangedLocked(typeURL string)
	// StartedLocked reports whether the stream is open, so that what the
	// engine subscribes to will be written.
	StartedLocked() bool
	// EndLocked ends the stream and its timers. No Locked Host method
	// runs for the stream afterwards (a decode under way may still call
	// ResolveName). Idempotent.
	EndLocked()
}

// Host is the engine's side of a stream: its connection to one server,
// the cache and the watchers. The stream calls the Locked methods with
// Config.Lock held, the others without.
type Host interface {
	// SubscribedTypesLocked lists the types with a subscribed name.
	SubscribedTypesLocked() []string
	// SubscriptionLocked returns the names of typeURL to subscribe to and
	// the last version accepted from this server. The stream keeps the
	// slices; the host must not modify them. While the names have not
	// changed, the host returns the same Base again with no changes.
	SubscriptionLocked(typeURL string) (names Names, version string)
	// SubscriptionBuiltLocked hands the host the list built from names
	// (names.List()), which it returns as the Base of the next changes.
	// A stream that ends first does not call it: the host then builds the
	// list itself when it next needs it.
	SubscriptionBuiltLocked(typeURL string, names Names, list []string)
	// TimerLocked reports whether name (a cache key) needs a
	// does-not-exist timer now that its subscription is written, and its
	// length.
	TimerLocked(typeURL, name string) (time.Duration, bool)
	// TimeoutLocked: the does-not-exist timer of name ran out.
	TimeoutLocked(typeURL, name string)
	// ReceivedLocked: a response arrived, readable or not, so the server
	// is reachable.
	ReceivedLocked()
	// ApplyResourcesLocked applies part of a decoded response's resources
	// to the cache (stage 2). A large response is applied in parts of
	// ApplyPart resources, with the lock released between them, so that
	// a Watch call waits for one part rather than the whole response;
	// the stream writes no request for the type meanwhile. The
	// notifications it schedules hold gate.
	ApplyResourcesLocked(r *Response, part []Resource, gate *Gate)
	// FinishLocked completes a response whose resources have all been
	// applied: its TP3 errors, the deletions it implies and its version.
	// A response whose stream ended between parts is not finished.
	FinishLocked(r *Response, gate *Gate)
	// UnreadableLocked: a response's envelope did not parse. u.Type is
	// set when its type and nonce could be read and the type is
	// registered: then the response has been NACKed.
	UnreadableLocked(u Unreadable, gate *Gate)
	// ResourceVersionsLocked returns the versions of the resources of
	// typeURL cached from this server, by name, for an incremental
	// stream's initial_resource_versions: what the server need not send
	// again.
	ResourceVersionsLocked(typeURL string) map[string]string
	// StillHeldLocked reports whether held, which ApplyResourcesLocked
	// gave a resource of an earlier response (Resource.Held), still holds
	// exactly the bytes heldRaw it gave with it (Resource.Raw): valid,
	// accepted, from this server, with no error pending. If so, it
	// returns the resource's name, key and value: a resource sent again
	// with those bytes at the same index is applied by updating its
	// version only (Resource.Unchanged).
	StillHeldLocked(held any, heldRaw []byte) (name, key string, value registry.Resource, ok bool)
	// CachedLocked returns the value cached from this server that was
	// decoded from exactly raw, sent in a wrapper of that name (or in
	// none), so that decoding it again is skipped. hash is raw's under
	// Config.HashSeed when wrapper is "" (a wrapped resource is found by
	// its wrapper's name, others by the name their type's NameField
	// holds, or by hash). held is the Resource.Held of the resource at
	// the same index of the last response, or nil: the likely place of
	// this one, which the host checks before it uses it. at is a handle
	// on what the host found, whatever it holds, or nil: the stream gives
	// it to the resource as its Held.
	CachedLocked(typeURL, wrapper string, hash uint64, raw []byte, held any) (name string, value registry.Resource, at any, ok bool)
	// ResolveName returns the cache key of a name, or why it is not a name
	// anybody can watch. It takes no lock.
	ResolveName(typeURL, name string) (key string, err error)
	// EndedLocked: stream s ended with err; seenResponse says whether a
	// response had been read on it.
	EndedLocked(s Stream, err error, seenResponse bool)
	// SlowWatchers: reads have been held for Config.SlowWatcherThreshold
	// by notifications still waiting for done: notifications in all,
	// about the resources pending. No lock is held.
	SlowWatchers(pending []Pending, notifications int)
}

// RawStream is an open gRPC stream carrying serialized messages. Send and
// Recv may run concurrently with each other. A message is never modified
// once sent.
type RawStream interface {
	Send(msg []byte) error
	Recv() ([]byte, error)
}

// buffersSender is a RawStream that takes a message as several buffers,
// which it may keep until written (engine.BuffersSender).
type buffersSender interface {
	SendBuffers(msg net.Buffers) error
}

// Clock is the engine's source of time.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Config is what a stream needs from the engine.
type Config struct {
	Host Host
	// Lock guards the stream's state and the Host's.
	Lock sync.Locker
	// Open opens the underlying stream; it should fail rather than wait
	// while the server is unreachable. Cancelling ctx ends the stream.
	Open func(ctx context.Context) (RawStream, error)
	// Goroutines tracks the stream's goroutines, so that the engine can
	// wait for them on Close.
	Goroutines *sync.WaitGroup
	// Callers counts calls (Watch, cancel) waiting for Lock. Between the
	// parts of a response the stream lets them in first.
	Callers *atomic.Int32
	// Types looks up a registered, enabled resource type.
	Types    func(typeURL string) (registry.ResourceType, bool)
	Switches features.Switches
	Server   registry.ServerInfo

	// CertificateProviders goes to the decoders as
	// registry.DecodeOptions.CertificateProviders.
	CertificateProviders func(name string) bool

	// Node goes in the first request of the stream.
	Node     *corepb.Node
	Clock    Clock
	HashSeed maphash.Seed
	// SlowWatcherThreshold is how long a response's notifications may
	// hold reads before Host.SlowWatchers is told; zero never.
	SlowWatcherThreshold time.Duration
	Log                  *slog.Logger
}

// Response is a decoded response: stage 1's result, for the host to
// apply.
type Response struct {
	Type    registry.ResourceType
	Version string
	// Received is when the response was read, on Config.Clock.
	Received time.Time
	// Resources are those whose name resolves, each name once: valid ones
	// with Value, invalid ones with Err.
	Resources []Resource
	// Errors are the response's valid xRFC TP3 entries, each name once.
	Errors []ResourceError
	// Named holds the key of every resource and TP3 entry that has one;
	// it may be left nil for NamedKeys to fill, when the host asks.
	Named map[string]bool
	// Removed are the keys an incremental response removed: deletions,
	// for every type (a SotW response deletes by absence instead).
	Removed []string
	// Complete says that every resource and TP3 entry was named. For a
	// type whose SotW responses carry every resource, what Named lacks
	// has then been deleted; a resource whose name could not be learned
	// could be any resource.
	Complete bool
	// Accepted says that the version is accepted: at least one resource
	// was valid, or none failed (gRPC's rule). A response with failures
	// is NACKed all the same.
	Accepted bool
	// Valid and Invalid count resources for metrics; Invalid includes TP3
	// entries, which A78 counts as invalid updates.
	Valid, Invalid int

	// sameKeys is the type's last response while every key checked so
	// far is the one at its index there, and Named is not filled
	// (addKey); namedKept says that the response named exactly the keys
	// of that one, and Named is its map, which must not be written to,
	// or nil.
	sameKeys  *lastResponse
	namedKept bool
	namedSize int // what Named is sized for

	// pending is set while resources are still being decoded and
	// checked (pipeline.go): Resources then holds those checked so far,
	// and the fields above are final only once it is nil.
	pending *pending
}

// NamedKeys returns Named, filling it first if the response left it nil:
// a large response that named exactly the keys of the last one keeps no
// map of them, and the host seldom needs one (only for a cached resource
// it did not see the response name while applying it).
func (r *Response) NamedKeys() map[string]bool {
	if r.Named == nil {
		r.Named = make(map[string]bool, len(r.Resources))
		for i := range r.Resources {
			r.Named[r.Resources[i].Key] = true
		}
	}
	return r.Named
}

// Resource is one resource of a response.
type Resource struct {
	Key     string // cache key
	Wrapper string // the Resource wrapper's name, or ""
	Value   registry.Resource
	Raw     []byte
	// Hash is Raw's under Config.HashSeed when Wrapper is "", so that
	// the host indexes the bytes without hashing them again.
	Hash uint64
	// Version is the resource's own version in an incremental response,
	// "" in a SotW one.
	Version string
	Err     error // why it is invalid
	// Held is set by the host's ApplyResourcesLocked: a handle on where
	// it keeps the resource. When it holds the resource's value
	// afterwards, it also sets Raw to the bytes it holds, equal to those
	// sent, which nobody modifies. The stream gives Held back with the
	// resource at the same index of the next SotW response, as SotW
	// servers send their resources in the same order each time: to
	// StillHeldLocked, with Raw, when the bytes are the same (every
	// unchanged resource), and otherwise as where the host looks first
	// for the resource (CachedLocked, ApplyResourcesLocked), which in a
	// cache of 100,000 spares it the lookups of a changed one. The handle
	// CachedLocked returns replaces it, for ApplyResourcesLocked: on a
	// first response, where there is no last one, it spares each new
	// resource a second lookup. The host checks that a handle is still
	// the resource's before using it.
	Held any
	// Unchanged says that the host still holds exactly this resource, as
	// Held: its bytes are those at the same index of the stream's last
	// response of the type, and StillHeldLocked vouched for them. The
	// host applies it by updating its version.
	Unchanged bool

	// repeated: the bytes are those at the same index of the last
	// response, whose Raw (and Held) the candidate took.
	repeated bool
	index    int32  // in the response
	name     string // as sent, during stage 1; "" when it could not be learned
}

// ResourceError is one xRFC TP3 entry.
type ResourceError struct {
	Key     string
	Code    uint32 // a gRPC status code other than OK
	Message string // valid UTF-8
}

// Unreadable describes a response whose envelope did not parse.
type Unreadable struct {
	// TypeURL is the response's type_url, when it could be read.
	TypeURL string
	// Type is set when the response was NACKed: its type and nonce were
	// read and the type is registered.
	Type *registry.ResourceType
	Err  error
}

// Pending is one notification still waiting for its watcher's done.
type Pending struct {
	TypeURL, Name string
}

// ApplyPart is how many resources of a response are applied (or looked
// up in the cache) in one critical section: some 30-100 µs of work, so
// that a Watch made while a response of 10,000 resources is applied waits
// for one part, not the whole response.
const ApplyPart = 64

// ADSMethod is the full gRPC method name of the SotW ADS stream.
const ADSMethod = "/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
