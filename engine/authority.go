package engine

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"strings"
	"unicode/utf8"

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
	// wildcards are the WatchAll calls by type (old-style names only).
	wildcards map[string][]*wildcard
	answered  bool // a server of it has: Config.Store is not served
	// storeWaitedOut: Config.StoreWait passed with no server answering,
	// so the store serves (storeServesLocked); stopStoreWait stops the
	// wait while it runs.
	storeWaitedOut bool
	stopStoreWait  func() bool
	// unconfirmed are the entries the store served when a server first
	// answered, until a response of their type leaves them unsent
	// (storeConfirmLocked).
	unconfirmed []*entry
}

// entriesLocked returns the authority's entries of a type, made on first use.
func (a *authority) entriesLocked(typeURL string) map[string]*entry {
	byName := a.resources[typeURL]
	if byName == nil {
		byName = make(map[string]*entry)
		a.resources[typeURL] = byName
	}
	return byName
}

// entries yields the authority's entries, of every type.
func (a *authority) entries() iter.Seq[*entry] {
	return func(yield func(*entry) bool) {
		for _, byName := range a.resources {
			for _, en := range byName {
				if !yield(en) {
					return
				}
			}
		}
	}
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

func newAuthority(s authoritySetup) *authority {
	return &authority{name: s.Name, servers: s.Servers, reachabilityOnly: s.ReachabilityOnly,
		resources: make(map[string]map[string]*entry), wildcards: make(map[string][]*wildcard)}
}

// resolveName finds a resource name's authority and cache key (A47),
// without a lock: the authorities are fixed when the engine is built.
func (e *Engine) resolveName(typeURL, name string) (*authority, string, *Error) {
	a, key, err := e.auths.resolve(typeURL, name)
	if err == nil {
		return a, key, nil
	}
	kind, code := KindInvalidName, codes.InvalidArgument
	if err.UnknownAuthority {
		kind, code = KindUnknownAuthority, codes.FailedPrecondition
	}
	return nil, "", &Error{Kind: kind, Code: code, TypeURL: typeURL, Name: err.Name, NodeID: e.nodeID, Err: err.Err}
}

func (e *Engine) lookupEntryLocked(typeURL, name string) (*authority, *entry) {
	a, key, err := e.resolveName(typeURL, name)
	if err != nil {
		return nil, nil
	}
	return a, a.resources[typeURL][key]
}

func (e *Engine) allAuthoritiesLocked() []*authority {
	return slices.AppendSeq([]*authority{e.auths.oldStyle}, maps.Values(e.auths.byName))
}

// keysLocked looks up, for a stream, the entries of a type's cache keys.
func (e *Engine) keysLocked(typeURL string) keyLookup {
	return keyLookup{as: &e.auths, typeURL: typeURL}
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

// maybeFallbackLocked connects, past the authority's failing active server,
// each next server (subscribed to all the authority watches) until one is
// not known to be failing, and reports whether one was.
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
	for en := range a.entries() {
		switch {
		case en.orphaned:
		case en.value != nil:
			st.Cached++
		case en.state == StateRequested:
			st.Uncached++
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

// authorities are a bootstrap's authorities, fixed in New, so read
// without a lock: a Watch resolves its name before it takes the
// engine's lock.
type authorities struct {
	oldStyle *authority            // of names that are not xdstp:// URIs
	byName   map[string]*authority // of xdstp:// names, by authority
}

// nameError is why a name has no authority: it is not valid UTF-8 or does
// not parse, or (UnknownAuthority) it names one not in the bootstrap.
type nameError struct {
	UnknownAuthority bool
	Name             string // the name, made valid UTF-8
	Err              error
}

// resolve returns the authority and cache key of a resource of type
// typeURL called name.
func (as *authorities) resolve(typeURL, name string) (*authority, string, *nameError) {
	// A canonical name with nothing encoded, as keys and most names are,
	// is its own key: no parse, no string built.
	if auth, typ, ok := xdsname.SplitPlain(name); ok && typ == xdsname.TypeFromURL(typeURL) {
		if a, ok := as.byName[auth]; ok {
			return a, name, nil
		}
	}
	if !utf8.ValidString(name) {
		// It could never be sent: a request's names are proto strings.
		return nil, "", &nameError{Name: strings.ToValidUTF8(name, "\uFFFD"), Err: errors.New("resource name is not valid UTF-8")}
	}
	if !strings.HasPrefix(name, "xdstp:") {
		return as.oldStyle, name, nil
	}
	n, err := xdsname.Parse(name)
	if err == nil {
		err = xdsname.CheckType(n, typeURL)
	}
	if err != nil {
		return nil, "", &nameError{Name: name, Err: fmt.Errorf("unable to parse resource name: %w", err)}
	}
	a, ok := as.byName[n.Authority]
	if !ok {
		return nil, "", &nameError{UnknownAuthority: true, Name: name, Err: fmt.Errorf("authority %q is not in the bootstrap", n.Authority)}
	}
	return a, n.String(), nil
}

// key returns the cache key of a name of a type, or why it has none.
func (as *authorities) key(typeURL, name string) (string, error) {
	_, key, err := as.resolve(typeURL, name)
	if err != nil {
		return "", err.Err
	}
	return key, nil
}

// keyLookup finds the entries of one type's cache keys, which a stream hands
// over, within one critical section. A key is canonical, so only its
// authority is read, and keys of one authority in a row reuse its map:
// 1,000 resources cost 1,000 lookups, not three times as many.
type keyLookup struct {
	as      *authorities
	typeURL string
	// The last key's authority: xdstp says whether an xdstp name's, auth
	// its name; a is nil if none was looked up, or it was unknown.
	xdstp  bool
	auth   string
	a      *authority
	byName map[string]*entry
}

// entry returns the authority of key, nil if unknown, and its entry, nil
// if it has none.
func (k *keyLookup) entry(key string) (*authority, *entry) {
	if rest, ok := strings.CutPrefix(key, "xdstp://"); ok {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return nil, nil
		}
		if k.a == nil || !k.xdstp || rest[:i] != k.auth {
			k.set(k.as.byName[rest[:i]], true, rest[:i])
		}
	} else if k.a == nil || k.xdstp {
		k.set(k.as.oldStyle, false, "")
	}
	return k.a, k.byName[key] // a nil map reads as empty
}

func (k *keyLookup) set(a *authority, xdstp bool, auth string) {
	k.a, k.xdstp, k.auth, k.byName = a, xdstp, auth, nil
	if a != nil {
		k.byName = a.resources[k.typeURL]
	}
}
