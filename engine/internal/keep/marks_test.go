package keep

import (
	"strings"
	"testing"
	"time"
)

// TestMarksGather: what a gather returns, in order, for the marks made
// since the last one: each resource to keep as it is then (so a later
// change without a mark is seen), a forgotten one as a deletion, and
// nothing twice that a later mark does not need.
func TestMarksGather(t *testing.T) {
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
		{"kept, forgotten, kept", []op{{"a", "1", 0}, {"-a", "", 0}, {"a", "3", 0}}, "a@3 a- a@3"},
		{"the last ttl", []op{{"a", "1", time.Minute}, {"a", "2", 0}, {"b", "1", time.Second}}, "a@2 b@1+1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version := map[string]string{}
			woken := 0
			m := &Marks[string]{Wake: func() { woken++ }}
			for _, o := range tc.ops {
				if name, ok := strings.CutPrefix(o.name, "-"); ok {
					m.Forget(name)
					continue
				}
				version[o.name] = o.version
				m.Keep(o.name, Expiry(t0, o.ttl))
			}
			var got []string
			for _, c := range m.Gather(func(name string, forget bool) (Change, bool) {
				return Change{Key: Key{Name: name}, Version: version[name], Delete: forget}, true
			}) {
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
			if rest := m.Gather(nil); len(rest) != 0 {
				t.Fatalf("a second gather returned %v", rest)
			}
		})
	}
}
