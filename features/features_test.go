package features_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/xdsengine/xdsengine/features"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type named string

func (n named) Name() string { return string(n) }

type doubleTimer struct{ named }

func (doubleTimer) ResourceTimer(def features.Timer) features.Timer {
	def.Timeout *= 2
	return def
}

type keepAll struct{ named }

func (keepAll) ErrorAction(features.ErrorEvent, features.Action) features.Action {
	return features.Keep
}

func TestResolve(t *testing.T) {
	mine := doubleTimer{named(features.NameFailOnDataErrors)} // overrides the built-in of that name
	tests := []struct {
		name  string
		names []string
		known []features.ServerFeature
		want  []string
	}{
		{"bootstrap order kept", []string{features.NameTrustedXDSServer, features.NameFailOnDataErrors}, features.Builtin(),
			[]string{features.NameTrustedXDSServer, features.NameFailOnDataErrors}},
		{"unknown ignored", []string{"xds_v3", "no_such_feature", features.NameIgnoreResourceDeletion}, features.Builtin(),
			[]string{features.NameIgnoreResourceDeletion}},
		{"listed twice, taken once", []string{features.NameFailOnDataErrors, features.NameFailOnDataErrors}, features.Builtin(),
			[]string{features.NameFailOnDataErrors}},
		{"nothing known", []string{"a"}, nil, nil},
	}
	for _, tc := range tests {
		got := features.Resolve(tc.names, tc.known...)
		if !slices.Equal(got.Names(), tc.want) {
			t.Errorf("%s: Resolve(%v) = %v, want %v", tc.name, tc.names, got.Names(), tc.want)
		}
	}
	s := features.Resolve([]string{features.NameFailOnDataErrors}, append(features.Builtin(), mine)...)
	if _, ok := s[0].(doubleTimer); !ok {
		t.Fatalf("a later known feature of the same name must win, got %T", s[0])
	}
}

func TestErrorAction(t *testing.T) {
	data := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}
	transient := features.ErrorEvent{Class: features.TransientError, Reason: features.ReasonServerReported}
	tests := []struct {
		name string
		set  features.Set
		ev   features.ErrorEvent
		want features.Action
	}{
		{"A88 default keeps", nil, data, features.Keep},
		{"fail_on_data_errors drops data errors", features.Set{features.FailOnDataErrors}, data, features.Drop},
		{"fail_on_data_errors keeps transient errors", features.Set{features.FailOnDataErrors}, transient, features.Keep},
		{"folded in order: a later keep wins", features.Set{features.FailOnDataErrors, keepAll{"k"}}, data, features.Keep},
		{"folded in order: a later drop wins", features.Set{keepAll{"k"}, features.FailOnDataErrors}, data, features.Drop},
		{"recognized features without hooks change nothing", features.Set{features.IgnoreResourceDeletion, features.TrustedXDSServer}, data, features.Keep},
	}
	for _, tc := range tests {
		if got := tc.set.ErrorAction(tc.ev, features.Keep); got != tc.want {
			t.Errorf("%s: ErrorAction = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestResourceTimer(t *testing.T) {
	tests := []struct {
		name string
		set  features.Set
		want features.Timer
	}{
		{"default", nil, features.Timer{Timeout: 15 * time.Second}},
		{"transient", features.Set{features.ResourceTimerIsTransientError}, features.Timer{Timeout: 30 * time.Second, Transient: true}},
		{"transient then doubled", features.Set{features.ResourceTimerIsTransientError, doubleTimer{"d"}}, features.Timer{Timeout: 60 * time.Second, Transient: true}},
		{"doubled then transient", features.Set{doubleTimer{"d"}, features.ResourceTimerIsTransientError}, features.Timer{Timeout: 30 * time.Second, Transient: true}},
	}
	for _, tc := range tests {
		if got := tc.set.ResourceTimer(features.DefaultTimer); got != tc.want {
			t.Errorf("%s: ResourceTimer = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestLegacyBuiltin(t *testing.T) {
	s := features.Resolve([]string{features.NameFailOnDataErrors, features.NameResourceTimerIsTransientError, features.NameIgnoreResourceDeletion}, features.LegacyBuiltin()...)
	if len(s) != 3 {
		t.Fatalf("legacy features must still be recognized, got %v", s.Names())
	}
	nack := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}
	deletion := features.ErrorEvent{Class: features.DataError, Reason: features.ReasonDeletion}
	if s.ErrorAction(nack, features.Keep) != features.Keep {
		t.Error("legacy fail_on_data_errors must be inert")
	}
	if s.ErrorAction(deletion, features.Drop) != features.Keep {
		t.Error("legacy ignore_resource_deletion must keep deleted resources")
	}
	if s.ResourceTimer(features.DefaultTimer) != features.DefaultTimer {
		t.Error("legacy resource_timer_is_transient_error must be inert")
	}
}

// failOnNACK is a server feature of the user's own: NACKs drop the cached
// resource, other data errors keep gRPC's default.
type failOnNACK struct{}

func (failOnNACK) Name() string { return "example.com/fail_on_nack" }

func (failOnNACK) ErrorAction(ev features.ErrorEvent, def features.Action) features.Action {
	if ev.Reason == features.ReasonNACK {
		return features.Drop
	}
	return def
}

func ExampleResolve() {
	// The bootstrap's "server_features", resolved against the built-in
	// features and the user's own.
	set := features.Resolve([]string{"xds_v3", "example.com/fail_on_nack"}, append(features.Builtin(), failOnNACK{})...)
	fmt.Println(set.Names())
	fmt.Println(set.ErrorAction(features.ErrorEvent{Class: features.DataError, Reason: features.ReasonNACK}, features.Keep))
	fmt.Println(set.ErrorAction(features.ErrorEvent{Class: features.DataError, Reason: features.ReasonDeletion}, features.Keep))
	// Output:
	// [example.com/fail_on_nack]
	// drop
	// keep
}
