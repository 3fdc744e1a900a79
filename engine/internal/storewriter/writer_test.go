package storewriter

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/engine/storage"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// memStore records the change sets it is given, and fails while fail is set.
type memStore struct {
	mu   sync.Mutex
	sets [][]storage.Change
	fail bool
}

func (s *memStore) apply(cs []storage.Change) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail {
		return errors.New("disk full")
	}
	s.sets = append(s.sets, slices.Clone(cs))
	return nil
}

func (s *memStore) names() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, set := range s.sets {
		var names []string
		for _, c := range set {
			name := c.Name + "@" + c.Version
			if c.Delete {
				name = c.Name + "-"
			}
			names = append(names, name)
		}
		slices.Sort(names)
		out = append(out, names)
	}
	return out
}

// changes is a writer's gather: what was put since it last gathered.
type changes struct {
	mu   sync.Mutex
	made []storage.Change
	w    *Writer
}

func (s *changes) gather() []storage.Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	made := s.made
	s.made = nil
	return made
}

func (s *changes) put(c storage.Change) {
	s.mu.Lock()
	s.made = append(s.made, c)
	s.mu.Unlock()
	s.w.Wake()
}

// newWriter starts a writer to s, and returns it and where to put changes.
func newWriter(s *memStore, failed func(error), interval time.Duration) (*Writer, *changes) {
	c := &changes{}
	c.w = NewWriter(c.gather, s.apply, failed, interval, time.Hour)
	return c.w, c
}

func put(c *changes, name, version string) {
	c.put(storage.Change{Resource: storage.Resource{TypeURL: "t", Name: name, Version: version, Raw: []byte(version)}})
}

// TestLatestChangeWins: changes gathered between two change sets are
// written once each, in their latest state; a deletion is a change too.
func TestLatestChangeWins(t *testing.T) {
	s := &memStore{}
	w, c := newWriter(s, nil, time.Hour)
	defer w.Close()
	if err := w.Flush(); err != nil { // the writer now waits out its interval
		t.Fatal(err)
	}
	put(c, "a", "1")
	put(c, "a", "2")
	put(c, "b", "1")
	c.put(storage.Change{Resource: storage.Resource{TypeURL: "t", Name: "b"}, Delete: true})
	put(c, "c", "1")
	w.Close()
	got := s.names()
	if len(got) != 1 || strings.Join(got[0], " ") != "a@2 b- c@1" {
		t.Fatalf("change sets %v, want one: [a@2 b- c@1]", got)
	}
}

// TestFailedSetIsKept: a change set that fails is written with the next,
// unless a later change of a resource replaced its own; the failure is
// reported.
func TestFailedSetIsKept(t *testing.T) {
	s := &memStore{fail: true}
	var failures []error
	w, c := newWriter(s, func(err error) { failures = append(failures, err) }, time.Millisecond)
	put(c, "a", "1")
	put(c, "b", "1")
	if err := w.Flush(); err == nil {
		t.Fatal("Flush of a failing store reported no error")
	}
	put(c, "b", "2")
	s.mu.Lock()
	s.fail = false
	s.mu.Unlock()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := s.names(); len(got) != 1 || strings.Join(got[0], " ") != "a@1 b@2" {
		t.Fatalf("change sets %v, want one: [a@1 b@2]", got)
	}
	if len(failures) == 0 {
		t.Fatal("the failure was not reported")
	}
}

// TestCloseWritesWhatIsPending: Close writes what was put, at once, even
// in the middle of an interval; a Put after Close is dropped.
func TestCloseWritesWhatIsPending(t *testing.T) {
	s := &memStore{}
	w, c := newWriter(s, nil, time.Hour)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	put(c, "a", "1")
	start := time.Now()
	w.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
	put(c, "b", "1")
	w.Close()
	if got := s.names(); len(got) != 1 || strings.Join(got[0], " ") != "a@1" {
		t.Fatalf("change sets %v, want one: [a@1]", got)
	}
}

// TestKeptBytesAreRefreshed: bytes the store holds are not written again
// until refresh has passed since they were received; other bytes, and a
// change back after a deletion was written, are.
func TestKeptBytesAreRefreshed(t *testing.T) {
	s := &memStore{}
	w, c := newWriter(s, nil, time.Millisecond)
	defer w.Close()
	t0 := time.Unix(1e9, 0)
	at := func(name, raw string, received time.Time) {
		c.put(storage.Change{Resource: storage.Resource{TypeURL: "t", Name: name, Version: raw, Raw: []byte(raw), Received: received}})
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	at("a", "1", t0)
	at("a", "1", t0.Add(time.Minute))    // held, recent: not written
	at("a", "2", t0.Add(2*time.Minute))  // changed
	at("a", "2", t0.Add(62*time.Minute)) // an hour since: refreshed
	c.put(storage.Change{Resource: storage.Resource{TypeURL: "t", Name: "a"}, Delete: true})
	at("a", "2", t0.Add(63*time.Minute)) // deleted and back before a write: no change
	c.put(storage.Change{Resource: storage.Resource{TypeURL: "t", Name: "a"}, Delete: true})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	at("a", "2", t0.Add(64*time.Minute)) // deleted from the store: written
	got := s.names()
	want := [][]string{{"a@1"}, {"a@2"}, {"a@2"}, {"a-"}, {"a@2"}}
	if len(got) != len(want) {
		t.Fatalf("change sets %v, want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("change sets %v, want %v", got, want)
		}
	}
}

// TestOneResponseOneChangeSet: changes put one after another, as a
// response's are, are written in one change set, not the first alone
// and the rest an interval later.
func TestOneResponseOneChangeSet(t *testing.T) {
	s := &memStore{}
	w, c := newWriter(s, nil, 50*time.Millisecond)
	defer w.Close()
	put(c, "a", "1")
	time.Sleep(5 * time.Millisecond) // the writer has woken
	put(c, "b", "1")
	deadline := time.Now().Add(5 * time.Second)
	for len(s.names()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(60 * time.Millisecond) // a second set would be written by now
	if got, want := s.names(), [][]string{{"a@1", "b@1"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("change sets %v, want %v", got, want)
	}
}
