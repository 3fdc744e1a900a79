package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// authority is one A47 authority: its servers and the resources watched
// under it. Old-style names have their own, apart from the bootstrap's
// (which may include one named "").
type authority struct {
	name             string
	oldStyle         bool
	servers          []bootstrap.ServerConfig
	reachabilityOnly bool
	// channels are the servers in use, by priority; the last is active.
	// A71: a fallback is appended while those before stay subscribed; the
	// first response of a higher one truncates the list after it.
	channels  []*channel
	resources map[string]map[string]*entry // type URL → name → entry
	// marked orders each type's entries by when a response last marked
	// them (entry.coveredBy), latest first: those a response did not name
	// are at the back, its deletions found without a walk of the others.
	marked map[string]*markOrder
	// wildcards are the WatchAll calls by type (old-style names only).
	wildcards map[string][]*wildcard
	answered  bool // a server of it has: Config.Store is not served
}

// entriesLocked returns the authority's entries of a type, made empty on
// first use.
func (a *authority) entriesLocked(typeURL string) map[string]*entry {
	byName := a.resources[typeURL]
	if byName == nil {
		byName = make(map[string]*entry)
		a.resources[typeURL] = byName
		a.marked[typeURL] = &markOrder{}
	}
	return byName
}

// markOrder lists an authority's entries of one type, linked through
// entry.prevMarked and entry.nextMarked.
type markOrder struct{ front, back *entry }

func (o *markOrder) pushBack(en *entry) {
	en.prevMarked, en.nextMarked = o.back, nil
	if o.back != nil {
		o.back.nextMarked = en
	} else {
		o.front = en
	}
	o.back = en
}

func (o *markOrder) remove(en *entry) {
	if en.prevMarked != nil {
		en.prevMarked.nextMarked = en.nextMarked
	} else {
		o.front = en.nextMarked
	}
	if en.nextMarked != nil {
		en.nextMarked.prevMarked = en.prevMarked
	} else {
		o.back = en.prevMarked
	}
	en.prevMarked, en.nextMarked = nil, nil
}

func (o *markOrder) moveToFront(en *entry) {
	if o.front == en {
		return
	}
	o.remove(en)
	en.nextMarked = o.front
	o.front.prevMarked = en
	o.front = en
}

func (a *authority) active() *channel {
	if len(a.channels) == 0 {
		return nil
	}
	return a.channels[len(a.channels)-1]
}

func (a *authority) displayName() string {
	if a.oldStyle {
		return "#old"
	}
	return a.name
}

func (e *Engine) newAuthority(name string, servers []bootstrap.ServerConfig, reachabilityOnly bool) *authority {
	if e.switches.DisableFallback && len(servers) > 1 {
		servers = servers[:1]
	}
	return &authority{name: name, servers: servers, reachabilityOnly: reachabilityOnly && !e.switches.DisableEndpointFallback,
		resources: make(map[string]map[string]*entry), marked: make(map[string]*markOrder), wildcards: make(map[string][]*wildcard)}
}

// resolveName finds a resource name's authority and cache key: the name,
// or an xdstp:// name's canonical form (A47). It needs no lock: the
// authorities are fixed when the engine is built.
func (e *Engine) resolveName(typeURL, name string) (*authority, string, *Error) {
	// A canonical name with nothing encoded, as keys and most names are,
	// is its own key: no parse, no string built.
	if a := e.plainAuthority(typeURL, name); a != nil {
		return a, name, nil
	}
	if !utf8.ValidString(name) {
		// It could never be sent: a request's names are proto strings.
		return nil, "", &Error{Kind: KindInvalidName, Code: codes.InvalidArgument, TypeURL: typeURL, Name: strings.ToValidUTF8(name, "\uFFFD"),
			NodeID: e.nodeID, Err: errors.New("resource name is not valid UTF-8")}
	}
	if !strings.HasPrefix(name, "xdstp:") {
		return e.oldStyle, name, nil
	}
	n, err := xdsname.Parse(name)
	if err == nil {
		err = xdsname.CheckType(n, typeURL)
	}
	if err != nil {
		return nil, "", &Error{Kind: KindInvalidName, Code: codes.InvalidArgument, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: fmt.Errorf("unable to parse resource name: %w", err)}
	}
	a, ok := e.authorities[n.Authority]
	if !ok {
		return nil, "", &Error{Kind: KindUnknownAuthority, Code: codes.FailedPrecondition, TypeURL: typeURL, Name: name,
			NodeID: e.nodeID, Err: fmt.Errorf("authority %q is not in the bootstrap", n.Authority)}
	}
	return a, n.String(), nil
}

// plainAuthority returns name's authority if name is a plain canonical
// xdstp name (xdsname.SplitPlain, its own cache key) of typeURL's type
// from a bootstrap authority, else nil.
func (e *Engine) plainAuthority(typeURL, name string) *authority {
	auth, typ, ok := xdsname.SplitPlain(name)
	if !ok || typ != xdsname.TypeFromURL(typeURL) {
		return nil
	}
	return e.authorities[auth]
}

func (e *Engine) lookupEntryLocked(typeURL, name string) (*authority, *entry) {
	a, key, err := e.resolveName(typeURL, name)
	if err != nil {
		return nil, nil
	}
	return a, a.resources[typeURL][key]
}

func (e *Engine) allAuthoritiesLocked() []*authority {
	return slices.AppendSeq([]*authority{e.oldStyle}, maps.Values(e.authorities))
}

// keyLookup finds the entries of one type's cache keys, which a stream
// hands over, within one critical section. A key is canonical, so only
// its authority is read, and keys of one authority in a row reuse its
// map: 1,000 resources cost 1,000 lookups, not three times as many.
type keyLookup struct {
	e       *Engine
	typeURL string
	// The last key's authority: xdstp says whether an xdstp name's, auth
	// its name; a is nil if none was looked up, or it was unknown.
	xdstp  bool
	auth   string
	a      *authority
	byName map[string]*entry
}

func (k *keyLookup) entry(key string) (*authority, *entry) {
	if rest, ok := strings.CutPrefix(key, "xdstp://"); ok {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return nil, nil
		}
		if k.a == nil || !k.xdstp || rest[:i] != k.auth {
			k.set(k.e.authorities[rest[:i]], true, rest[:i])
		}
	} else if k.a == nil || k.xdstp {
		k.set(k.e.oldStyle, false, "")
	}
	if k.a == nil {
		return nil, nil
	}
	return k.a, k.byName[key]
}

func (k *keyLookup) set(a *authority, xdstp bool, auth string) {
	k.a, k.xdstp, k.auth, k.byName = a, xdstp, auth, nil
	if a != nil {
		k.byName = a.resources[k.typeURL]
	}
}

// FallbackState is what a FallbackPolicy decides on: an authority whose
// active xDS server just became unreachable, or got a new watch while so.
type FallbackState struct {
	// Authority is the A47 authority, "" for old-style names.
	Authority string
	// Server is the unreachable server; Next is the one fallback would
	// connect to.
	Server, Next string
	// Uncached counts watched resources still waiting for their first
	// version (state REQUESTED); Cached counts those with a cached one.
	Uncached, Cached int
	// ReachabilityOnly is the authority's fallback_on_reachability_only
	// (A95; false when GRPC_EXPERIMENTAL_XDS_ENDPOINT_FALLBACK=false).
	ReachabilityOnly bool
}

// FallbackPolicy decides whether an authority moves on to its next
// server. It is called with the engine's lock held: it must be quick and
// not call the engine.
type FallbackPolicy interface {
	ShouldFallback(s FallbackState) bool
}

// FallbackPolicyFunc adapts a function to a FallbackPolicy.
type FallbackPolicyFunc func(s FallbackState) bool

// ShouldFallback calls f.
func (f FallbackPolicyFunc) ShouldFallback(s FallbackState) bool { return f(s) }

// DefaultFallbackPolicy is gRPC's: fall back when a watched resource is
// still uncached (A71), or on unreachability alone when the authority sets
// fallback_on_reachability_only (A95).
func DefaultFallbackPolicy() FallbackPolicy {
	return FallbackPolicyFunc(func(s FallbackState) bool { return s.Uncached > 0 || s.ReachabilityOnly })
}

// maybeFallbackLocked connects, past the authority's failing active
// server, each next server (subscribing it to all the authority watches)
// until one is not known to be failing, and reports whether one was.
func (e *Engine) maybeFallbackLocked(a *authority) bool {
	if e.switches.DisableFallback || len(a.channels) >= len(a.servers) {
		return false
	}
	st := FallbackState{Authority: a.name, Server: a.active().server.URI, Next: a.servers[len(a.channels)].URI,
		ReachabilityOnly: a.reachabilityOnly}
	for typeURL, wws := range a.wildcards {
		if len(wws) > 0 && len(a.resources[typeURL]) == 0 {
			st.Uncached++ // a wildcard that got nothing yet
		}
	}
	for _, byName := range a.resources {
		for _, en := range byName {
			switch {
			case en.orphaned:
			case en.value != nil:
				st.Cached++
			case en.state == StateRequested:
				st.Uncached++
			}
		}
	}
	if !e.fallback.ShouldFallback(st) {
		return false
	}
	for len(a.channels) < len(a.servers) {
		from := a.active()
		c := e.addChannelLocked(a)
		e.log.Warn("xDS fallback", "authority", a.displayName(), "from", from.server.URI, "to", c.server.URI)
		for _, typeURL := range c.subscribedTypesLocked() {
			c.typeChangedLocked(typeURL)
		}
		if c.buildErr != nil && c.status == nil {
			c.status = e.newError(KindConnectivity, codes.Unavailable, nil, c, c.buildErr)
		}
		if c.status == nil {
			return true
		}
	}
	return false
}
