package refcount

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errClosed = errors.New("closed")

// value counts its Close calls.
type value struct {
	key    string
	closes int
	err    error // what Close returns
}

func (v *value) Close() error { v.closes++; return v.err }

// world is a map and what its builds made, by key.
type world struct {
	m        *Map[string, *value]
	built    map[string][]*value
	releases []func()
}

func (w *world) get(key string) (*value, error) {
	v, release, err := w.m.Get(key, func() (*value, error) {
		if key == "bad" {
			return nil, errors.New("cannot build")
		}
		v := &value{key: key}
		if key == "failing" {
			v.err = errors.New("close failed")
		}
		w.built[key] = append(w.built[key], v)
		return v, nil
	})
	if err == nil {
		w.releases = append(w.releases, release)
	}
	return v, err
}

func TestMap(t *testing.T) {
	// Each step is "get K", "release N" (the N-th reference handed out,
	// from 0, released twice: a release is idempotent) or "close".
	for _, tc := range []struct {
		name   string
		steps  []string
		keys   []string       // Keys after the steps
		builds map[string]int // how many values each key had built
		closes map[string]int // Close calls on the last built
		err    string         // of the last step
	}{
		{name: "shared while used", steps: []string{"get a", "get a", "get b"}, keys: []string{"a", "b"},
			builds: map[string]int{"a": 1, "b": 1}, closes: map[string]int{"a": 0, "b": 0}},
		{name: "closed with its last user", steps: []string{"get a", "get a", "release 0", "release 1"}, keys: []string{},
			builds: map[string]int{"a": 1}, closes: map[string]int{"a": 1}},
		{name: "built again after its last user", steps: []string{"get a", "release 0", "get a"}, keys: []string{"a"},
			builds: map[string]int{"a": 2}, closes: map[string]int{"a": 0}},
		{name: "a failed build is not kept", steps: []string{"get bad"}, keys: []string{}, builds: map[string]int{},
			err: "cannot build"},
		{name: "close closes what is used", steps: []string{"get a", "get b", "close"}, keys: []string{},
			builds: map[string]int{"a": 1, "b": 1}, closes: map[string]int{"a": 1, "b": 1}},
		{name: "close joins the errors", steps: []string{"get failing", "close"}, keys: []string{},
			builds: map[string]int{"failing": 1}, closes: map[string]int{"failing": 1}, err: "close failed"},
		{name: "a release after close does not close again", steps: []string{"get a", "close", "release 0"},
			keys: []string{}, builds: map[string]int{"a": 1}, closes: map[string]int{"a": 1}},
		{name: "get after close fails", steps: []string{"close", "close", "get a"}, keys: []string{},
			builds: map[string]int{}, err: "closed"},
	} {
		w := &world{m: New[string, *value](errClosed), built: map[string][]*value{}}
		var err error
		for _, step := range tc.steps {
			verb, arg, _ := strings.Cut(step, " ")
			switch verb {
			case "close":
				err = w.m.Close()
			case "get":
				_, err = w.get(arg)
			case "release":
				n, serr := strconv.Atoi(arg)
				if serr != nil {
					t.Fatalf("%s: step %q", tc.name, step)
				}
				w.releases[n]()
				w.releases[n]()
			}
		}
		if got := fmt.Sprint(err); (tc.err == "" && err != nil) || (tc.err != "" && got != tc.err) {
			t.Errorf("%s: last step's error %v, want %q", tc.name, err, tc.err)
		}
		if got := w.m.Keys(); got == nil || !slices.Equal(got, tc.keys) {
			t.Errorf("%s: Keys() = %#v, want %#v", tc.name, got, tc.keys)
		}
		if len(w.built) != len(tc.builds) {
			t.Errorf("%s: built %d keys, want %d", tc.name, len(w.built), len(tc.builds))
		}
		for key, n := range tc.builds {
			if len(w.built[key]) != n {
				t.Errorf("%s: %s built %d times, want %d", tc.name, key, len(w.built[key]), n)
				continue
			}
			if last := w.built[key][n-1]; last.closes != tc.closes[key] {
				t.Errorf("%s: %s closed %d times, want %d", tc.name, key, last.closes, tc.closes[key])
			}
		}
	}
}

// TestValues: each value once, in its key's order.
func TestValues(t *testing.T) {
	w := &world{m: New[string, *value](errClosed), built: map[string][]*value{}}
	for _, key := range []string{"b", "a", "b"} {
		if _, err := w.get(key); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for _, v := range w.m.Values() {
		keys = append(keys, v.key)
	}
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("Values() hold %v, want a and b once each, in order", keys)
	}
}

// TestConcurrent gets and releases from several goroutines (for -race):
// whatever the interleaving, each value is closed once, after its last
// release.
func TestConcurrent(t *testing.T) {
	m := New[string, *value](errClosed)
	var mu sync.Mutex
	var built []*value
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				_, release, err := m.Get(fmt.Sprint((i+j)%3), func() (*value, error) {
					v := &value{}
					mu.Lock()
					built = append(built, v)
					mu.Unlock()
					return v, nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				release()
			}
		})
	}
	wg.Wait()
	if keys := m.Keys(); len(keys) != 0 {
		t.Errorf("after every release, Keys() = %v", keys)
	}
	for _, v := range built {
		if v.closes != 1 {
			t.Errorf("a value was closed %d times, want once", v.closes)
		}
	}
}
