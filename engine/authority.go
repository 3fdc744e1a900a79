package engine

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc/codes"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// authority is one A47 authority: its ordered server list and the
// resources watched under it. Old-style names have an authority of their
// own, apart from the bootstrap's, which may include one named "".
type authority struct {
	name             string
	oldStyle         bool
	servers          []bootstrap.ServerConfig
	reachabilityOnly bool
	// channels are the servers in use, in priority order; the last one is
	// active. A71: a fallback is appended while the ones before it stay
	// subscribed, and the first response of a higher one truncates the
	// list after it.
	channels  []*channel
	resources map[string]map[string]*entry // type URL → name → entry
	// marked orders the entries of each type by when a response last
	// marked them (entry.coveredBy), the latest first: a response that
	// marks its entries as it goes leaves those it did not name at the
	// back, where its deletions are found without a walk of the others.
	marked map[string]*markOrder
}

// markOrder is a list of an authority's entries of one type, linked
// through entry.prevMarked and entry.nextMarked.
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
	return &authority{
		name:             name,
		servers:          servers,
		reachabilityOnly: reachabilityOnly && !e.switches.DisableEndpointFallback,
		resources:        make(map[string]map[string]*entry),
		marked:           make(map[string]*markOrder),
	}
}

// resolveName finds the authority of a resource name and its cache
// key: the name itself, or for xdstp:// names its canonical form (A47).
// It needs no lock: the authorities are fixed when the engine is built.
func (e *Engine) resolveName(typeURL, name string) (*authority, string, *Error) {
	// Names in canonical form with nothing encoded, as cache keys and most
	// names are, are their own key: no parse, no string built. Anything
	// else, and every error, takes the way below.
	if a := plainAuthority(e, typeURL, name); a != nil {
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

// plainAuthority returns the authority of name if name is a plain
// canonical xdstp name (xdsname.SplitPlain) of typeURL's type from an
// authority of the bootstrap, and nil otherwise. Such a name is its own
// cache key.
func plainAuthority[T string | []byte](e *Engine, typeURL string, name T) *authority {
	auth, typ, ok := xdsname.SplitPlain(name)
	if !ok || string(typ) != xdsname.TypeFromURL(typeURL) {
		return nil
	}
	return e.authorities[string(auth)]
}

// lookupEntryLocked finds the entry for a name received from a server.
func (e *Engine) lookupEntryLocked(typeURL, name string) (*authority, *entry) {
	a, key, err := e.resolveName(typeURL, name)
	if err != nil {
		return nil, nil
	}
	return a, a.resources[typeURL][key]
}

func (e *Engine) allAuthoritiesLocked() []*authority {
	out := make([]*authority, 0, len(e.authorities)+1)
	out = append(out, e.oldStyle)
	for _, a := range e.authorities {
		out = append(out, a)
	}
	return out
}

// keyLookup finds the entries of cache keys a stream hands over, for one
// type, within one critical section. A key is canonical already, so only
// its authority is read, and keys of one authority in a row reuse its
// map: a response of 1,000 resources costs 1,000 lookups of their keys,
// not three times as many.
type keyLookup struct {
	e       *Engine
	typeURL string
	// The last key's authority: xdstp says it was an xdstp name's, auth
	// its name; a is nil when none was looked up, or it was unknown.
	xdstp  bool
	auth   string
	a      *authority
	byName map[string]*entry
}

func (e *Engine) keyLookup(typeURL string) keyLookup {
	return keyLookup{e: e, typeURL: typeURL}
}

// entry returns key's entry and its authority, or nils.
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
