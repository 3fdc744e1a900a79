package engine

import (
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/registry"
)

// globValue is a resource that compares by its text.
type globValue string

func (v globValue) Equal(o registry.Resource) bool { w, ok := o.(globValue); return ok && v == w }

// opaqueValue is a resource without Equal: never equal to another.
type opaqueValue struct{ s string }

const (
	memberA = "xdstp://auth/envoy.config.cluster.v3.Cluster/c/a"
	memberB = "xdstp://auth/envoy.config.cluster.v3.Cluster/c/b"
)

// TestGlobMembersUpdate: which updates reach the watchers, and what the collection
// and its versions are after each.
func TestGlobMembersUpdate(t *testing.T) {
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
			{key: memberB, value: globValue("1"), tell: true},
			{key: memberA, value: globValue("1"), version: "v1", tell: true},
		}, []string{memberA, memberB}, map[string]string{memberA: "v1"}, ""},
		{"unchanged value, new version", []step{
			{key: memberA, value: globValue("1"), version: "v1", tell: true},
			{key: memberA, value: globValue("1"), version: "v2", tell: false},
		}, []string{memberA}, map[string]string{memberA: "v2"}, ""},
		{"changed value", []step{
			{key: memberA, value: globValue("1"), tell: true},
			{key: memberA, value: globValue("2"), tell: true},
		}, []string{memberA}, map[string]string{}, ""},
		{"no Equal: always a change", []step{
			{key: memberA, value: &opaqueValue{"x"}, tell: true},
			{key: memberA, value: &opaqueValue{"x"}, tell: true},
		}, []string{memberA}, map[string]string{}, ""},
		{"removal of a member", []step{
			{key: memberA, value: globValue("1"), version: "v1", tell: true},
			{key: memberA, tell: true},
		}, []string{}, map[string]string{}, ""},
		{"removal of a stranger", []step{
			{key: memberA, value: globValue("1"), tell: true},
			{key: memberB, tell: false},
		}, []string{memberA}, map[string]string{}, ""},
		{"invalid member keeps its value", []step{
			{key: memberA, value: globValue("1"), tell: true},
			{key: memberA, err: errors.New("bad cluster"), tell: true},
		}, []string{memberA}, map[string]string{}, "invalid member \"" + memberA + "\": bad cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m globMembers
			for i, s := range tc.steps {
				if got := m.update(s.key, s.value, s.version, s.err); got != s.tell {
					t.Errorf("step %d: Update = %v, want %v", i, got, s.tell)
				}
			}
			coll := m.collection("xdstp://auth/envoy.config.cluster.v3.Cluster/c/*")
			var names []string
			for _, mem := range coll.Members {
				names = append(names, mem.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.members, ",") {
				t.Errorf("members %v, want %v", names, tc.members)
			}
			versions := map[string]string{}
			if !m.addVersions(versions) || !maps.Equal(versions, tc.versions) {
				t.Errorf("versions %v, want %v", versions, tc.versions)
			}
			gotErr := ""
			if err := m.takeErr(); err != nil {
				gotErr = err.Error()
			}
			if gotErr != tc.wantErr || m.takeErr() != nil {
				t.Errorf("TakeErr = %q, want %q once", gotErr, tc.wantErr)
			}
		})
	}
}

// TestGlobMembersReset: a reset collection has no members and no versions to
// offer; a nil one neither.
func TestGlobMembersReset(t *testing.T) {
	var m globMembers
	m.update(memberA, globValue("1"), "v1", nil)
	m.reset()
	if n := len(m.collection("c").Members); n != 0 {
		t.Errorf("%d members after Reset", n)
	}
	dst := map[string]string{}
	if m.addVersions(dst) || len(dst) != 0 {
		t.Errorf("AddVersions after Reset: %v", dst)
	}
	var none *globMembers
	if none.addVersions(dst) {
		t.Error("AddVersions of nil reports members")
	}
}
