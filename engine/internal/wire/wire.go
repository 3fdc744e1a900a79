package wire

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/transport"
)

// Stream is one stream attempt to one server, State of the World
// ([NewSotW]) or incremental ([NewDelta]). It starts when made.
type Stream interface {
	// Changed tells the stream that the subscription of a type may have
	// changed: it asks Host.Subscription and writes the result when it
	// can.
	Changed(typeURL string)
	// Await starts does-not-exist timers of length timeout for names
	// this stream has written already, as if they were written now:
	// resources that the host held from elsewhere (the last-known-good
	// store) and that the server, now that it answers, is to confirm.
	// It never waits for the stream's locks.
	Await(typeURL string, names []string, timeout time.Duration)
	// Stop ends the stream and its timers. A Host call under way may
	// still finish; the host ignores the calls of a stream it stopped.
	// Idempotent.
	Stop()
}

// The seam between the engine and a stream is Host, which the stream
// calls back from its goroutines, Names, which it asks while it decodes,
// and the values in Config. The stream shares no lock with the host:
//
//   - Subscription and Timeout are called with the stream's own lock held
//     (so that names written and answers settling them are recorded in
//     one order); the host takes its lock inside them, and never calls
//     the stream but through Changed and Await, which take neither.
//   - Apply is called with no lock of the stream's but its decode memo's
//     (Memo), held by the receiving goroutine for the whole response: the
//     host touches the memo only through Resource.Keep.
//   - Open, Quiet, Ended and SlowWatchers are called with no lock held.
//   - Names is called with no lock held, concurrently, from the decoding
//     goroutines.

// Host is the engine's side of a stream: the cache, the watchers, the
// subscriptions, and the connection.
type Host interface {
	// Open opens the underlying stream; it should fail rather than wait
	// while the server is unreachable. Cancelling ctx ends the stream.
	Open(ctx context.Context) (transport.Stream, error)
	// Subscription returns what to subscribe to for a type, as this
	// stream is to write it now.
	Subscription(typeURL string) Subscription
	// Apply hands over a part of a response, in order: the response's
	// parts are applied before its answer is written. The notifications
	// the host schedules hold p.Gate. p.Resources is the stream's, valid
	// until Apply returns (what the host keeps of a resource, its value
	// and bytes, stays valid).
	Apply(p Part)
	// Timeout: the does-not-exist timers of names, written on this stream
	// and still unanswered, ran out.
	Timeout(typeURL string, names []string)
	// Quiet: requests of these types that subscribed to names have gone
	// unanswered for Config.QuietWindow, and the stream is still open:
	// the server has nothing new to send for them (see Config.QuietWindow).
	Quiet(typeURLs []string)
	// Ended: the stream ended with err; sawResponse says whether it had
	// read a response. ErrNewStream: the stream ended itself, to be
	// replaced at once.
	Ended(err error, sawResponse bool)
	// SlowWatchers: a response's notifications have held reads for
	// Config.SlowWatcherThreshold (the stream has logged it); perType
	// counts, by type URL, the resources of those still waiting for done.
	SlowWatchers(perType map[string]int)
}

// Names is what a stream asks of the engine's resource types and names
// while it decodes. It must be safe to call concurrently.
type Names interface {
	// Type returns a registered resource type that is on.
	Type(typeURL string) (*registry.ResourceType, bool)
	// Key returns the cache key of a name of a type, or why no one can
	// watch that name.
	Key(typeURL, name string) (key string, err error)
}

// Subscription is a type's subscription as the host hands it to a stream:
// a value, which neither side modifies once handed over.
type Subscription struct {
	// Names are every name to subscribe to, sorted; "*" among them is the
	// wildcard (every resource of the type), which Wildcard also says.
	Names    []string
	Wildcard bool
	// Added and Removed are how Names differ from the last Subscription
	// of the type handed to this stream (Added is all of Names the first
	// time), sorted.
	Added, Removed []string
	// Awaited are the names of Added for which nothing is cached: each
	// gets a does-not-exist timer of length Timeout once a request naming
	// it is written, unless an answer for it arrives first (A27, A57).
	Awaited []string
	Timeout time.Duration
	// Version is the version_info last accepted from the server for the
	// type, which a State-of-the-World request carries.
	Version string
	// Versions are, on an incremental stream's first subscription of the
	// type, the versions of the resources cached from the server, by
	// name: initial_resource_versions, what the server need not send.
	Versions map[string]string
}

// Part is a piece of a response, handed to the host in order. Parts hold
// decoded values only, and are immutable.
type Part struct {
	*Response
	// Resources are this part's resources, in the response's order.
	Resources []Resource
	// First and Last mark the response's first and last parts; a
	// response read whole is one part with both set.
	First, Last bool
}

// Response is what a stream learned of one response; the fields under
// "last part" are set only once its last part is handed over.
type Response struct {
	TypeURL string
	// Type is the response's type when it is registered.
	Type *registry.ResourceType
	// Version is version_info (SotW) or system_version_info (incremental).
	Version string
	// Received is when the response was read, on Config.Clock.
	Received time.Time
	// Gate holds the stream's next read until every notification the
	// host schedules for the response has called done.
	Gate *Gate
	// Repeat: the response is the last one again (the same version,
	// resources and errors), in answer to an ACK of it that changed no
	// subscription: some servers answer every ACK so. It holds nothing
	// else, is not decoded, and is ACKed again.
	Repeat bool
	// Unreadable is why the response did not parse; then it holds nothing
	// else. With Type set, its type and nonce could be read and it was
	// NACKed; without, it was ignored.
	Unreadable error

	// Last part:

	// Errors are the response's valid xRFC TP3 entries, each name once.
	Errors []ResourceError
	// Removed are the names an incremental response removed: deletions,
	// for every type (a SotW response deletes by absence instead).
	Removed []string
	// Complete says that every resource and TP3 entry was named. For a
	// type whose SotW responses carry every resource, what the response
	// does not name has then been deleted.
	Complete bool
	// Accepted says that the version is accepted: a resource was valid,
	// or none failed (gRPC's rule). A response with failures is NACKed
	// all the same.
	Accepted bool
	// Valid and Invalid count resources for metrics; Invalid includes TP3
	// entries, which A78 counts as invalid updates.
	Valid, Invalid int

	// named reports whether the response named a key (Named).
	named func(key string) bool
}

// Named reports whether the response named key, in a resource or a TP3
// entry. It is meant for the host's Apply of the last part, for the few
// entries it did not see named as it applied the parts.
func (r *Response) Named(key string) bool { return r.named != nil && r.named(key) }

// Resource is one resource of a response.
type Resource struct {
	// Key is the resource's cache key: its name, canonical for xdstp.
	Key   string
	Value registry.Resource // nil with Err
	// Raw is the resource's bytes. Bytes equal to those of a resource the
	// stream handed over before from the same server come as the same
	// slice with the same Value (the decode memo): a host that keeps them
	// tells a resource sent again unchanged by its Raw alone.
	Raw []byte
	// Version is the resource's own version in an incremental response,
	// "" in a SotW one.
	Version string
	// TTL is the ttl of the Resource wrapper a SotW response sent it in,
	// 0 when none: how long it is valid unless sent again. (Incremental
	// responses with one are NACKed: this client keeps no resource for a
	// time, as gRPC's do not; only the last-known-good store honours it.)
	TTL time.Duration
	Err error // why it is invalid

	// What stage 1 learns of a resource before it is handed over (see
	// candidate): the Resource wrapper's name or "", the name as sent
	// ("" when it could not be learned), the memo's entry of its name
	// and, with known, of these very bytes, and their hash where the memo
	// finds them by it.
	wrapper, name string
	memo          *memoEntry
	known         bool
	hash          uint64
}

// Entry is the host's entry of a resource's key: the host hands it to
// the stream with Resource.Keep, and the stream's decode memo, which
// finds a resource by its place in the last response or by its key,
// hands it back with the resource the next time (Resource.Entry): the
// host's cache is searched once per key, not once per response. The
// host must check that an entry handed back is still its entry of the
// key.
type Entry interface {
	// EntryKey is the entry's cache key.
	EntryKey() string
}

// Entry returns the host's entry of the resource's key, as the host
// kept it (Keep) when the stream last handed the key over, or nil.
func (r *Resource) Entry() Entry {
	if r.memo == nil {
		return nil
	}
	return r.memo.entry
}

// Keep has the stream keep e, the host's entry of the resource's key,
// for the next resource of that key (Entry). Called from Host.Apply,
// while the stream holds its memo.
func (r *Resource) Keep(e Entry) {
	if r.memo != nil {
		r.memo.entry = e
	}
}

// ResourceError is one xRFC TP3 entry.
type ResourceError struct {
	Key     string
	Code    uint32 // a gRPC status code other than OK
	Message string // valid UTF-8
}

// Pending is one notification still waiting for its watcher's done.
type Pending struct {
	TypeURL, Name string
}

// Clock is the engine's source of time.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

// Config is what a stream needs from the engine.
type Config struct {
	Host  Host
	Names Names
	// Goroutines tracks the stream's goroutines, so that the engine can
	// wait for them on Close.
	Goroutines *sync.WaitGroup
	// Memo is the server's decode memo, which outlives its streams.
	Memo *Memo
	// DecodeOptions are every resource's decode options, but for the
	// wrapper name: the server (its URI, features, protocol), the
	// switches, the certificate provider instances.
	DecodeOptions registry.DecodeOptions

	// Node goes in the first request of the stream.
	Node  *corepb.Node
	Clock Clock
	// SlowWatcherThreshold is how long a response's notifications may
	// hold reads before Host.SlowWatchers is told; zero never.
	SlowWatcherThreshold time.Duration
	// QuietWindow is how long a request that subscribed to names may go
	// unanswered, on a stream still open, before Host.Quiet is told: a
	// server with nothing new to send says nothing (an incremental server
	// whose initial_resource_versions are current, or one whose resources
	// the stream holds already), and one that refuses a stream ends it.
	// Zero or negative: never.
	QuietWindow time.Duration
	Log         *slog.Logger
}

// ErrNewStream is how a stream that ended itself to be replaced at once
// says so (Host.Ended): a State-of-the-World stream that has written
// names of a type cannot take a wildcard of it in a form every server
// reads (see the sotw variant).
var ErrNewStream = errors.New("xDS stream replaced: a wildcard subscription joined names written on it")

// ApplyPart is how many resources of a response the host applies at a
// time: some 30-100 µs of work, so that what the host does between parts
// (a Watch made meanwhile) waits for one part, not the whole response.
const ApplyPart = 64
