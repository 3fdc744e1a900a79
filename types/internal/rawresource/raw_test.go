package rawresource_test

import (
	"bytes"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/types/internal/rawresource"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// named is a resource type of the usual kind: a name and its bytes.
type named struct {
	name string
	raw  []byte
}

func (n *named) Equal(other registry.Resource) bool {
	return rawresource.Equal(n, other, func(a, b *named) bool { return a.name == b.name && bytes.Equal(a.raw, b.raw) })
}

type otherType struct{ raw []byte }

func TestEqual(t *testing.T) {
	a := &named{"a", []byte("x")}
	var nilNamed *named
	tests := []struct {
		name  string
		r     *named
		other registry.Resource
		want  bool
	}{
		{"same bytes and name", a, &named{"a", []byte("x")}, true},
		{"itself", a, a, true},
		{"other bytes", a, &named{"a", []byte("y")}, false},
		{"other name", a, &named{"b", []byte("x")}, false},
		{"another type with the same bytes", a, &otherType{[]byte("x")}, false},
		{"nil interface", a, nil, false},
		{"a nil of the type", a, nilNamed, false},
		{"nil receiver, nil of the type", nilNamed, nilNamed, true},
		{"nil receiver, a value", nilNamed, a, false},
		{"nil receiver, nil interface", nilNamed, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Equal(tc.other); got != tc.want {
				t.Fatalf("Equal = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestProto: each call gives a new message of the type, equal to the
// bytes, which the caller may modify without changing the next.
func TestProto(t *testing.T) {
	raw, err := proto.Marshal(wrapperspb.String("v"))
	if err != nil {
		t.Fatal(err)
	}
	first, ok := rawresource.Proto[wrapperspb.StringValue](raw).(*wrapperspb.StringValue)
	if !ok || first.GetValue() != "v" {
		t.Fatalf("Proto = %v, want a StringValue \"v\"", first)
	}
	first.Value = "changed"
	if second := rawresource.Proto[wrapperspb.StringValue](raw).(*wrapperspb.StringValue); second.GetValue() != "v" || second == first {
		t.Fatalf("second Proto = %v, want a new \"v\"", second)
	}
}
