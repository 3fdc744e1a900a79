package engine

import (
	"fmt"
	"github.com/xdsengine/xdsengine/engine/storage"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStoreMarksGather: what a gather returns, in order, for the marks made
// since the last one: each resource to keep as it is then (so a later
// change without a mark is seen), a forgotten one as a deletion, and
// nothing twice that a later mark does not need.
func TestStoreMarksGather(t *testing.T) {
	t0 := time.Unix(1e9, 0)
	type op struct {
		name    string // "-name" forgets
		version string // the resource's state after the op
		ttl     time.Duration
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want string // name@version, name- for a deletion, +ttl when it expires
	}{
		{"one mark per resource", []op{{"a", "1", 0}, {"a", "2", 0}, {"b", "1", 0}}, "a@2 b@1"},
		{"kept then forgotten", []op{{"a", "1", 0}, {"-a", "", 0}}, "a-"},
		{"forgotten then kept", []op{{"-a", "", 0}, {"a", "2", 0}}, "a- a@2"},
		{"kept, forgotten, kept", []op{{"a", "1", 0}, {"-a", "", 0}, {"a", "3", 0}}, "a- a@3"},
		{"the last ttl", []op{{"a", "1", time.Minute}, {"a", "2", 0}, {"b", "1", time.Second}}, "a@2 b@1+1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries := entriesByName{}
			woken := 0
			m := &storeMarks{Wake: func() { woken++ }}
			for _, o := range tc.ops {
				if name, ok := strings.CutPrefix(o.name, "-"); ok {
					m.forget(entries.of(name))
					continue
				}
				entries.of(o.name).version = o.version
				m.keep(entries.of(o.name), expiry(t0, o.ttl))
			}
			var got []string
			for _, c := range m.gather(&sync.Mutex{}, readEntry) {
				s := c.Name + "@" + c.Version
				if c.Delete {
					s = c.Name + "-"
				}
				if !c.Expires.IsZero() {
					s += "+" + c.Expires.Sub(t0).String()
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tc.want {
				t.Fatalf("gathered %q, want %q", strings.Join(got, " "), tc.want)
			}
			if woken != 1 {
				t.Fatalf("Wake called %d times, want once, at the first mark", woken)
			}
			if rest := m.gather(&sync.Mutex{}, nil); len(rest) != 0 {
				t.Fatalf("a second gather returned %v", rest)
			}
		})
	}
}

// turnLock is a mutex that runs between at the first turn a Gather
// takes: what the engine does while the gather lets go of its lock.
type turnLock struct {
	sync.Mutex
	between func()
	held    bool
}

func (l *turnLock) Lock() {
	l.Mutex.Lock()
	if l.held && l.between != nil {
		f := l.between
		l.between = nil
		f()
	}
	l.held = true
}

// TestStoreMarksGatherInTurns: a gather of more marks than a turn lets go of
// the lock between turns, and what is marked then is not lost: a change
// to a resource not yet read is read, one to a resource already read is
// left for the next Gather, which Wake announces.
func TestStoreMarksGatherInTurns(t *testing.T) {
	const n = gatherTurn * 2
	entries := entriesByName{}
	woken := 0
	m := &storeMarks{Wake: func() { woken++ }}
	for i := range n {
		en := entries.of(fmt.Sprint(i))
		en.version = "1"
		m.keep(en, time.Time{})
	}
	lock := &turnLock{between: func() {
		entries.of("0").version = "2" // read already
		m.keep(entries.of("0"), time.Time{})
		entries.of(fmt.Sprint(n - 1)).version = "2" // not yet read
		m.keep(entries.of(fmt.Sprint(n-1)), time.Time{})
		m.forget(entries.of(fmt.Sprint(n - 2)))
	}}
	got := map[string]string{}
	for _, c := range m.gather(lock, readEntry) {
		if c.Delete {
			got[c.Name] = "-"
		} else {
			got[c.Name] = c.Version
		}
	}
	if lock.between != nil {
		t.Fatal("the gather did not let go of the lock between turns")
	}
	if _, ok := got[fmt.Sprint(n-2)]; ok || len(got) != n-1 || got["0"] != "1" || got[fmt.Sprint(n-1)] != "2" {
		t.Fatalf("first gather: %d changes, 0@%s, %d@%s, %d in: %v; want %d, 0@1, the last @2, the one before left out (its forget is the next gather's)",
			len(got), got["0"], n-1, got[fmt.Sprint(n-1)], n-2, ok, n-1)
	}
	if woken != 2 {
		t.Fatalf("Wake called %d times, want twice: at the first mark, and for what the gather left", woken)
	}
	var next []string
	for _, c := range m.gather(&sync.Mutex{}, readEntry) {
		next = append(next, fmt.Sprintf("%s@%s/%v", c.Name, c.Version, c.Delete))
	}
	want := fmt.Sprintf("0@2/false %d@1/true", n-2)
	if strings.Join(next, " ") != want {
		t.Fatalf("second gather %q, want %q", strings.Join(next, " "), want)
	}
}

// entriesByName makes an entry per name, as the cache holds one per key.
type entriesByName map[string]*entry

func (m entriesByName) of(name string) *entry {
	if m[name] == nil {
		m[name] = &entry{name: name}
	}
	return m[name]
}

// readEntry is a gather's change: the entry as it is now.
func readEntry(en *entry, forget bool) (storage.Change, bool) {
	return storage.Change{Resource: storage.Resource{Name: en.name, Version: en.version}, Delete: forget}, true
}
