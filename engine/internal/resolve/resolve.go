// Package resolve finds the authority of a resource name and its cache
// key (gRFC A47): the name itself, or an xdstp:// name's canonical form.
// It is apart from the engine because it needs none of its state: the
// authorities are fixed when the engine is built, so a Watch resolves its
// name before it takes the engine's lock. A is the engine's authority.
package resolve

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdsengine/xdsengine/internal/xdsname"
)

// Authorities are a bootstrap's authorities, read without a lock.
type Authorities[A comparable] struct {
	OldStyle A            // of names that are not xdstp:// URIs
	ByName   map[string]A // of xdstp:// names, by authority
}

// Error is why a name has no authority: it is not valid UTF-8 or does
// not parse, or (UnknownAuthority) it names one not in the bootstrap.
type Error struct {
	UnknownAuthority bool
	Name             string // the name, made valid UTF-8
	Err              error
}

// Resolve returns the authority and cache key of a resource of type
// typeURL called name.
func (as *Authorities[A]) Resolve(typeURL, name string) (A, string, *Error) {
	var none A
	// A canonical name with nothing encoded, as keys and most names are,
	// is its own key: no parse, no string built.
	if auth, typ, ok := xdsname.SplitPlain(name); ok && typ == xdsname.TypeFromURL(typeURL) {
		if a, ok := as.ByName[auth]; ok {
			return a, name, nil
		}
	}
	if !utf8.ValidString(name) {
		// It could never be sent: a request's names are proto strings.
		return none, "", &Error{Name: strings.ToValidUTF8(name, "\uFFFD"), Err: errors.New("resource name is not valid UTF-8")}
	}
	if !strings.HasPrefix(name, "xdstp:") {
		return as.OldStyle, name, nil
	}
	n, err := xdsname.Parse(name)
	if err == nil {
		err = xdsname.CheckType(n, typeURL)
	}
	if err != nil {
		return none, "", &Error{Name: name, Err: fmt.Errorf("unable to parse resource name: %w", err)}
	}
	a, ok := as.ByName[n.Authority]
	if !ok {
		return none, "", &Error{UnknownAuthority: true, Name: name, Err: fmt.Errorf("authority %q is not in the bootstrap", n.Authority)}
	}
	return a, n.String(), nil
}

// Key returns the cache key of a name of a type, or why it has none.
func (as *Authorities[A]) Key(typeURL, name string) (string, error) {
	_, key, err := as.Resolve(typeURL, name)
	if err != nil {
		return "", err.Err
	}
	return key, nil
}

// Authority is what Keys needs of one: its entries (E) of a type.
type Authority[E any] interface {
	comparable
	Entries(typeURL string) map[string]E
}

// Keys finds the entries of one type's cache keys, which a stream hands
// over, within one critical section. A key is canonical, so only its
// authority is read, and keys of one authority in a row reuse its map:
// 1,000 resources cost 1,000 lookups, not three times as many.
type Keys[A Authority[E], E any] struct {
	as      *Authorities[A]
	typeURL string
	// The last key's authority: xdstp says whether an xdstp name's, auth
	// its name; a is the zero A if none was looked up, or it was unknown.
	xdstp  bool
	auth   string
	a      A
	byName map[string]E
}

// NewKeys returns a lookup of keys of type typeURL.
func NewKeys[A Authority[E], E any](as *Authorities[A], typeURL string) Keys[A, E] {
	return Keys[A, E]{as: as, typeURL: typeURL}
}

// Entry returns the authority of key, zero if unknown, and its entry,
// zero if it has none.
func (k *Keys[A, E]) Entry(key string) (A, E) {
	var none A
	if rest, ok := strings.CutPrefix(key, "xdstp://"); ok {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			var noEntry E
			return none, noEntry
		}
		if k.a == none || !k.xdstp || rest[:i] != k.auth {
			k.set(k.as.ByName[rest[:i]], true, rest[:i])
		}
	} else if k.a == none || k.xdstp {
		k.set(k.as.OldStyle, false, "")
	}
	return k.a, k.byName[key] // a nil map reads as empty
}

func (k *Keys[A, E]) set(a A, xdstp bool, auth string) {
	var none A
	k.a, k.xdstp, k.auth, k.byName = a, xdstp, auth, nil
	if a != none {
		k.byName = a.Entries(k.typeURL)
	}
}
