package wire

import (
	"bytes"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/xdsengine/xdsengine/internal/xdsname"
	"github.com/xdsengine/xdsengine/registry"
)

// Memo is a server's decode memo: what its responses held, by the bytes
// of each resource, so that a resource sent again with the same bytes is
// not decoded again. Decoding is deterministic (the same bytes, wrapper
// name and server give the same value or error), so a memo needs no
// word from the cache: it hands the value and the very bytes it kept,
// and the host, which keeps them too, tells an unchanged resource by its
// bytes' identity. A server's streams use its memo one after the other:
// it outlives them, so that a reconnect decodes nothing the server sends
// again unchanged.
type Memo struct {
	// mu is held by a stream's receiving goroutine for a whole response:
	// a stopped stream's last response and the next stream's first do not
	// mix.
	mu    sync.Mutex
	types map[string]*typeMemo
	seed  maphash.Seed
}

// NewMemo returns an empty memo.
func NewMemo() *Memo {
	return &Memo{types: make(map[string]*typeMemo), seed: maphash.MakeSeed()}
}

// typeMemo is the memo of one type.
type typeMemo struct {
	// byIndex are the resources of the last State-of-the-World response
	// by index: a SotW server sends every resource again, in the same
	// order as a rule, so most are found there without a lookup. next is
	// the one being built.
	byIndex, next []*memoEntry
	// byKey holds every entry by cache key; byHash the resources that
	// came without a wrapper, of a type with no NameField, by their
	// bytes' hash: the only way to find those before decoding them.
	byKey  map[string]*memoEntry
	byHash map[uint64]*memoEntry
	// gen numbers the responses; an entry's seen is the last that named
	// it, which finds duplicates without a map of the response's names.
	gen uint64
	// named counts the entries the response under way named.
	named int
	// sentNames are the names resources were sent under, by key, where
	// they are not their key.
	sentNames map[string]string
	// spare are entries allocated together and handed out one by one: a
	// first response of 1,000 resources makes 16 allocations for them,
	// not 1,000. A batch lives while one of its entries does.
	spare []memoEntry
}

func (tm *typeMemo) newEntry(key string) *memoEntry {
	if len(tm.spare) == 0 {
		tm.spare = make([]memoEntry, 64)
	}
	e := &tm.spare[0]
	tm.spare = tm.spare[1:]
	e.key = key
	return e
}

// memoEntry is one resource as decoded: a value or an error, and the
// host's entry of its key (Resource.Keep). It is kept small, one of them
// per resource of every server: the name a resource was sent under, when
// it is not the key (an xdstp name not in its canonical form), is in
// typeMemo.sentNames, and an error is held in place of a value.
type memoEntry struct {
	key, wrapper string
	raw          []byte
	decoded      registry.Resource // the value, or a memoError
	hash         uint64            // its key in byHash, or 0
	seen         uint64
	entry        Entry
}

// memoError is what a memoEntry holds of a resource that failed.
type memoError struct{ err error }

// result returns the entry's value or error.
func (e *memoEntry) result() (registry.Resource, error) {
	if f, ok := e.decoded.(memoError); ok {
		return nil, f.err
	}
	return e.decoded, nil
}

// hasValue reports whether the entry holds a valid value.
func (e *memoEntry) hasValue() bool {
	_, failed := e.decoded.(memoError)
	return e.decoded != nil && !failed
}

// forType returns the memo of a type, made on first use.
func (m *Memo) forType(typeURL string) *typeMemo {
	tm := m.types[typeURL]
	if tm == nil {
		tm = &typeMemo{byKey: make(map[string]*memoEntry)}
		m.types[typeURL] = tm
	}
	return tm
}

// begin starts a response of n resources.
func (tm *typeMemo) begin(n int, byIndex bool) {
	tm.gen++
	tm.named = 0
	if len(tm.byKey) == 0 && n > 8 {
		// A first response: sized once, rather than grown step by step.
		tm.byKey = make(map[string]*memoEntry, n)
	}
	if byIndex {
		if cap(tm.next) < n {
			tm.next = make([]*memoEntry, n)
		}
		tm.next = tm.next[:n]
	}
}

// lookup finds what c's bytes decoded to before: at the same index of the
// last response, under the name its wrapper or its type's NameField
// gives, or by the bytes' hash. A NameField that does not hold the name
// finds nothing, or an entry whose bytes differ: it costs a decode and
// nothing else. When the entry at c's index is that of c's name, whose
// bytes changed, c keeps it (c.memo, unmatched) for record: no lookup of
// the name at all, as a SotW server sends its resources in one order.
func (tm *typeMemo) lookup(m *Memo, typ *registry.ResourceType, c *candidate, i int) (hit bool) {
	var at *memoEntry
	if i < len(tm.byIndex) {
		if at = tm.byIndex[i]; at.matches(c) {
			c.memo = at
			return true
		}
	}
	var name []byte
	switch {
	case c.wrapper == "" && typ.NameField == 0:
		c.hash = maphash.Bytes(m.seed, c.Raw) // record files the entry under it
		c.memo = tm.byHash[c.hash].orNil(c)
		return c.memo != nil
	case len(tm.byKey) == 0:
		// The type's first response, or one after the memo dropped every
		// entry: no name can be found, so none is read (a cold start's
		// 1,000 Clusters would each be scanned for nothing).
		return false
	case c.wrapper != "":
		name = []byte(c.wrapper)
	default:
		var ok bool
		if name, ok = typ.ReadName(c.Raw); !ok {
			return false
		}
	}
	if at != nil && at.key == string(name) {
		c.memo = at // its key's entry, with other bytes
		return false
	}
	if e := tm.byKey[string(name)]; e.matches(c) {
		c.memo = e
		return true
	}
	return false
}

func (e *memoEntry) matches(c *candidate) bool {
	return e != nil && e.decoded != nil && e.wrapper == c.wrapper && bytes.Equal(e.raw, c.Raw)
}

func (e *memoEntry) orNil(c *candidate) *memoEntry {
	if e.matches(c) {
		return e
	}
	return nil
}

// named reports whether the response under way named key (so far).
func (tm *typeMemo) isNamed(key string) bool {
	e := tm.byKey[key]
	return e != nil && e.seen == tm.gen
}

// record notes that resource i of the response under way, checked, has
// key: it is found under its key, and at its index by the next response.
// A resource whose bytes changed takes over its key's entry. It reports
// false, and records nothing, if the response named key already. c.memo
// is the entry of c's bytes (hit), or one lookup found for its name.
func (tm *typeMemo) record(c *candidate, i int, key string, hit bool) bool {
	e := c.memo // a dropped entry is never found: it is its key's
	if e == nil || e.key != key {
		e = tm.byKey[key]
	}
	if e != nil && e.seen == tm.gen {
		return false
	}
	switch {
	case hit:
	case e != nil && c.Err != nil && e.hasValue():
		// An invalid version does not displace the valid one, which the
		// server may well send again.
		e.seen = tm.gen
		tm.named++
		return true
	case e == nil:
		e = tm.newEntry(key)
		tm.byKey[key] = e
		fallthrough
	default:
		if e.hash != 0 && tm.byHash[e.hash] == e {
			delete(tm.byHash, e.hash)
		}
		e.wrapper, e.raw, e.hash = c.wrapper, c.Raw, c.hash
		e.decoded = c.Value
		if c.Err != nil {
			e.decoded = memoError{c.Err}
		}
		tm.setSentName(key, c.name)
		if e.hash != 0 {
			if tm.byHash == nil {
				tm.byHash = make(map[uint64]*memoEntry)
			}
			tm.byHash[e.hash] = e
		}
	}
	e.seen = tm.gen
	tm.named++
	if i < len(tm.next) {
		tm.next[i] = e
	}
	c.memo = e
	return true
}

// end closes the response under way. One that named every resource of
// its type (a complete SotW response of a type whose responses carry
// them all) leaves in the memo only what it named. Otherwise, once the
// memo holds well more than the subscribed names (sorted), it keeps only
// those: a server may send resources nobody asked for, which the memo
// must not keep for ever.
func (tm *typeMemo) end(byIndex, named bool, subscribed []string) {
	if byIndex {
		tm.byIndex, tm.next = tm.next, tm.byIndex
		clear(tm.next)
		tm.next = tm.next[:0]
	}
	switch {
	case named && len(tm.byKey) > tm.named:
		for key, e := range tm.byKey {
			if e.seen != tm.gen {
				tm.drop(key, e)
			}
		}
	case len(tm.byKey) > 2*len(subscribed)+memoSlack && !slices.Contains(subscribed, wildcardName):
		for key, e := range tm.byKey {
			if !isSubscribed(subscribed, key) {
				tm.drop(key, e)
			}
		}
	}
}

// memoSlack is how many entries beyond twice the subscribed names a memo
// holds before it drops those of names not subscribed (a wildcard
// subscribes to every name).
const memoSlack = 1024

// wildcardName is the wildcard among a subscription's names.
const wildcardName = "*"

// isSubscribed reports whether key is a subscribed name, or a member of a
// subscribed glob collection (xRFC TP1).
func isSubscribed(subscribed []string, key string) bool {
	if _, ok := slices.BinarySearch(subscribed, key); ok {
		return true
	}
	glob, ok := xdsname.GlobOf(key)
	if !ok {
		return false
	}
	_, ok = slices.BinarySearch(subscribed, glob)
	return ok
}

// forget drops the entries of names no longer subscribed.
func (tm *typeMemo) forget(keys []string) {
	for _, key := range keys {
		if e := tm.byKey[key]; e != nil {
			tm.drop(key, e)
		}
	}
}

// drop removes an entry. It is emptied too, so that a hint to it (the
// last response's byIndex) finds nothing: every entry found is then its
// key's.
func (tm *typeMemo) drop(key string, e *memoEntry) {
	delete(tm.byKey, key)
	delete(tm.sentNames, key)
	if e.hash != 0 && tm.byHash[e.hash] == e {
		delete(tm.byHash, e.hash)
	}
	*e = memoEntry{}
}

// setSentName records the name the resource of key was sent under,
// when it is not key.
func (tm *typeMemo) setSentName(key, name string) {
	switch {
	case name != key:
		if tm.sentNames == nil {
			tm.sentNames = make(map[string]string)
		}
		tm.sentNames[key] = name
	case tm.sentNames != nil:
		delete(tm.sentNames, key)
	}
}

// sentName returns the name the resource of key was sent under.
func (tm *typeMemo) sentName(key string) string {
	if name, ok := tm.sentNames[key]; ok {
		return name
	}
	return key
}
