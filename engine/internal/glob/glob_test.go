package glob

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// value is a resource that compares by its text.
type value string

func (v value) Equal(o registry.Resource) bool { w, ok := o.(value); return ok && v == w }

// opaque is a resource without Equal: never equal to another.
type opaque struct{ s string }

const (
	a = "xdstp://auth/envoy.config.cluster.v3.Cluster/c/a"
	b = "xdstp://auth/envoy.config.cluster.v3.Cluster/c/b"
)

// TestUpdate: which updates reach the watchers, and what the collection
// and its versions are after each.
func TestUpdate(t *testing.T) {
	type step struct {
		key     string
		value   registry.Resource
		version string
		err     error
		tell    bool // Update's answer
	}
	for _, tc := range []struct {
		name     string
		steps    []step
		members  []string // the collection's names, in order
		versions map[string]string
		wantErr  string // TakeErr's, "" for nil
	}{
		{"new members, sorted", []step{
			{key: b, value: value("1"), tell: true},
			{key: a, value: value("1"), version: "v1", tell: true},
		}, []string{a, b}, map[string]string{a: "v1"}, ""},
		{"unchanged value, new version", []step{
			{key: a, value: value("1"), version: "v1", tell: true},
			{key: a, value: value("1"), version: "v2", tell: false},
		}, []string{a}, map[string]string{a: "v2"}, ""},
		{"changed value", []step{
			{key: a, value: value("1"), tell: true},
			{key: a, value: value("2"), tell: true},
		}, []string{a}, map[string]string{}, ""},
		{"no Equal: always a change", []step{
			{key: a, value: &opaque{"x"}, tell: true},
			{key: a, value: &opaque{"x"}, tell: true},
		}, []string{a}, map[string]string{}, ""},
		{"removal of a member", []step{
			{key: a, value: value("1"), version: "v1", tell: true},
			{key: a, tell: true},
		}, []string{}, map[string]string{}, ""},
		{"removal of a stranger", []step{
			{key: a, value: value("1"), tell: true},
			{key: b, tell: false},
		}, []string{a}, map[string]string{}, ""},
		{"invalid member keeps its value", []step{
			{key: a, value: value("1"), tell: true},
			{key: a, err: errors.New("bad cluster"), tell: true},
		}, []string{a}, map[string]string{}, "invalid member \"" + a + "\": bad cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m Members
			for i, s := range tc.steps {
				if got := m.Update(s.key, s.value, s.version, s.err); got != s.tell {
					t.Errorf("step %d: Update = %v, want %v", i, got, s.tell)
				}
			}
			coll := m.Collection("xdstp://auth/envoy.config.cluster.v3.Cluster/c/*")
			var names []string
			for _, mem := range coll.Members {
				names = append(names, mem.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.members, ",") {
				t.Errorf("members %v, want %v", names, tc.members)
			}
			versions := map[string]string{}
			if !m.AddVersions(versions) || !maps.Equal(versions, tc.versions) {
				t.Errorf("versions %v, want %v", versions, tc.versions)
			}
			gotErr := ""
			if err := m.TakeErr(); err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr || m.TakeErr() != nil {
				t.Errorf("TakeErr = %q, want %q once", gotErr, tc.wantErr)
			}
		})
	}
}

// TestReset: a reset collection has no members and no versions to
// offer; a nil one neither.
func TestReset(t *testing.T) {
	var m Members
	m.Update(a, value("1"), "v1", nil)
	m.Reset()
	if n := len(m.Collection("c").Members); n != 0 {
		t.Errorf("%d members after Reset", n)
	}
	dst := map[string]string{}
	if m.AddVersions(dst) || len(dst) != 0 {
		t.Errorf("AddVersions after Reset: %v", dst)
	}
	var none *Members
	if none.AddVersions(dst) {
		t.Error("AddVersions of nil reports members")
	}
}

// coll stands for the engine's entry of a collection.
type coll struct{ name string }

// TestTouched: each collection once, sorted by name, and the set empty
// after it is taken.
func TestTouched(t *testing.T) {
	x, y, z := &coll{"x/*"}, &coll{"y/*"}, &coll{"z/*"}
	for _, tc := range []struct {
		name  string
		added []*coll
		want  []*coll
	}{
		{"none", nil, nil},
		{"one", []*coll{y}, []*coll{y}},
		{"repeated, out of order", []*coll{z, x, z, y, x}, []*coll{x, y, z}},
	} {
		var touched Touched[*coll]
		for _, c := range tc.added {
			touched.Add(c)
		}
		if touched.Len() != len(tc.want) {
			t.Errorf("%s: Len = %d, want %d", tc.name, touched.Len(), len(tc.want))
		}
		got := touched.Take(func(c *coll) string { return c.name })
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Take = %v, want %v", tc.name, got, tc.want)
		}
		if touched.Len() != 0 {
			t.Errorf("%s: %d left after Take", tc.name, touched.Len())
		}
	}
}
