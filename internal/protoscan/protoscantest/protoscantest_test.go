package protoscantest

import (
	"errors"
	"strings"
	"testing"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func seedAddress(t testing.TB) []byte {
	b, err := proto.Marshal(&corepb.Address{Address: &corepb.Address_SocketAddress{SocketAddress: &corepb.SocketAddress{
		Address: "10.0.0.1", PortSpecifier: &corepb.SocketAddress_PortValue{PortValue: 80}, Protocol: corepb.SocketAddress_UDP,
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var addressMD = (&corepb.Address{}).ProtoReflect().Descriptor()

// TestMutateMeansWhatItSays: each mutation does to proto.Unmarshal what
// its name says: bad UTF-8, bad tags and cuts inside a field are refused;
// encodings written long and unknown fields change nothing.
func TestMutateMeansWhatItSays(t *testing.T) {
	seed := seedAddress(t)
	var want corepb.Address
	if err := proto.Unmarshal(seed, &want); err != nil {
		t.Fatal(err)
	}
	mutants := Mutate(addressMD, seed)
	names := make(map[string]bool)
	for _, m := range mutants {
		names[m.Name] = true
		var got corepb.Address
		err := proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(m.Bytes, &got)
		switch {
		case containsAny(m.Name, "UTF-8", "field number 0", "past the largest", "wire type 6", "wire type 7",
			"end-group tag alone", "never closed", "cut inside a field"):
			if err == nil {
				t.Errorf("%s (%x): proto.Unmarshal accepts it", m.Name, m.Bytes)
			}
		case containsAny(m.Name, "written long", "unknown field"):
			if err != nil || !proto.Equal(&got, &want) {
				t.Errorf("%s (%x): proto.Unmarshal gives %v, %v; want the seed", m.Name, m.Bytes, &got, err)
			}
		}
	}
	for _, name := range []string{
		"socket_address: sent twice",
		"socket_address: sent again with another value",
		"socket_address: sent as a varint",
		"socket_address: length written long",
		"socket_address.address: bad UTF-8",
		"socket_address.address: tag written long",
		"socket_address.port_value: varint written long",
		"socket_address.port_value: then named_port, another member of its oneof",
		"socket_address.port_value: after named_port, another member of its oneof",
		"socket_address.protocol: again, last, with another value",
		"socket_address.protocol: moved last",
		"socket_address.unknown field 8, a group, last",
		"socket_address.field number past the largest",
		"unknown field 4, a fixed64, first",
		"cut inside a field",
	} {
		if !names[name] {
			t.Errorf("no mutation %q", name)
		}
	}
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// socketAddress is what a fast path reads of an Address.
type socketAddress struct {
	ip   string
	port uint32
}

// readAddress is a fast path of the usual kind: address.socket_address
// with an IP and a port_value, each once; the faults switch off one of
// its checks at a time.
func readAddress(b []byte, fault string) (socketAddress, error) {
	it := protoscan.Fields(b)
	if !it.Next() || !it.Is(1, protoscan.BytesType) || len(it.Rest()) != 0 {
		return socketAddress{}, ErrDeclined
	}
	var out socketAddress
	var seen protoscan.FieldSet
	inner := protoscan.Fields(it.Value)
	for inner.Next() {
		if !seen.Add(inner.Num) && fault != "first wins" {
			return socketAddress{}, ErrDeclined
		}
		if fault == "any wire type" && inner.Num == 2 {
			out.ip = string(inner.Value)
			continue
		}
		switch {
		case inner.Is(2, protoscan.BytesType):
			if !protoscan.ValidUTF8(inner.Value) && fault != "no UTF-8 check" {
				return socketAddress{}, ErrDeclined
			}
			if out.ip == "" {
				out.ip = string(inner.Value)
			}
		case inner.Is(3, protoscan.VarintType):
			out.port = uint32(inner.Varint())
		case inner.Is(4, protoscan.BytesType) && fault == "oneof order":
			// named_port: skipped as if port_value still held.
		case inner.Is(1, protoscan.VarintType):
		default:
			return socketAddress{}, ErrDeclined
		}
	}
	if inner.Err() != nil {
		return socketAddress{}, ErrDeclined
	}
	return out, nil
}

func addressReference(b []byte) (socketAddress, error) {
	var a corepb.Address
	if err := proto.Unmarshal(b, &a); err != nil {
		return socketAddress{}, err
	}
	sa := a.GetSocketAddress()
	return socketAddress{ip: sa.GetAddress(), port: sa.GetPortValue()}, nil
}

// TestDifferentialCatchesFaults: the harness passes a correct fast path
// and catches each fault of a broken one on the mutations of one seed.
func TestDifferentialCatchesFaults(t *testing.T) {
	fast := func(fault string) Differential[socketAddress] {
		return Differential[socketAddress]{
			Fast:      func(b []byte) (socketAddress, error) { return readAddress(b, fault) },
			Reference: addressReference,
		}
	}
	fast("").Test(t, addressMD, seedAddress(t))
	inputs, _, _ := corpus(addressMD, [][]byte{seedAddress(t)})
	for _, fault := range []string{"first wins", "no UTF-8 check", "any wire type", "oneof order"} {
		d := fast(fault)
		caught := 0
		for _, b := range inputs {
			if d.Check(b) != nil {
				caught++
			}
		}
		if caught == 0 {
			t.Errorf("fault %q: no mutation shows it", fault)
		}
	}
}

func TestCheck(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	result := func(v int, err error) func([]byte) (int, error) {
		return func([]byte) (int, error) { return v, err }
	}
	tests := []struct {
		name     string
		d        Differential[int]
		disagree bool
	}{
		{"equal", Differential[int]{Fast: result(1, nil), Reference: result(1, nil)}, false},
		{"different", Differential[int]{Fast: result(1, nil), Reference: result(2, nil)}, true},
		{"declined", Differential[int]{Fast: result(0, ErrDeclined), Reference: result(2, errA)}, false},
		{"accepted what the reference refuses", Differential[int]{Fast: result(1, nil), Reference: result(0, errA)}, true},
		{"refused what the reference accepts", Differential[int]{Fast: result(0, errA), Reference: result(1, nil)}, true},
		{"both refuse", Differential[int]{Fast: result(0, errA), Reference: result(0, errB)}, false},
		{"both refuse, other words", Differential[int]{Fast: result(0, errA), Reference: result(0, errB), SameError: true}, true},
		{"partial, the reference refuses", Differential[int]{Fast: result(1, nil), Reference: result(0, errA), Partial: true}, false},
		{"partial, different", Differential[int]{Fast: result(1, nil), Reference: result(2, nil), Partial: true}, true},
		{"own equality", Differential[int]{Fast: result(1, nil), Reference: result(3, nil), Equal: func(a, b int) bool { return a%2 == b%2 }}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.d.Check(nil); (err != nil) != tc.disagree {
				t.Fatalf("Check = %v, want a disagreement: %v", err, tc.disagree)
			}
		})
	}
}
