package lds_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
	"github.com/xdsengine/xdsengine/types/lds"
)

func allServerCases() []serverCase {
	return slices.Concat(serverListenerCases(), matchCases(), tlsCases(), rbacCases(), istioCases())
}

func marshalServer(c serverCase) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.msg)
	if err != nil {
		panic(fmt.Sprintf("case %q: %v", c.name, err))
	}
	return b
}

// TestServerListeners decodes and validates every server case with the
// verdict gRPC gives it.
func TestServerListeners(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range allServerCases() {
		if seen[c.name] {
			t.Fatalf("two cases named %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			res, err := lds.Type.Decode(marshalServer(c), c.decodeOptions())
			if res.Name != c.msg.GetName() {
				t.Errorf("Decode name = %q, want %q", res.Name, c.msg.GetName())
			}
			if c.wantErr != "" {
				if err == nil {
					t.Fatalf("Decode = valid, want an error containing %q", c.wantErr)
				}
				for _, part := range strings.Split(c.wantErr, "|") {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("Decode error = %q, want it to contain %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			l := res.Resource.(*lds.Listener)
			if diff := cmp.Diff(c.msg, l.Proto(), protocmp.Transform()); diff != "" {
				t.Errorf("Proto() differs from the message sent (-sent +got):\n%s", diff)
			}
			if c.wantDeps != nil {
				if diff := cmp.Diff(c.wantDeps, lds.Type.Refs(l)); diff != "" {
					t.Errorf("dependencies mismatch (-want +got):\n%s", diff)
				}
			}
			if c.check != nil {
				if l.Server == nil {
					t.Fatal("Server = nil, want a server Listener")
				}
				c.check(t, l.Server)
			}
		})
	}
}

func TestServerConformance(t *testing.T) {
	var cases []registrytest.Case
	for _, c := range allServerCases() {
		cases = append(cases, registrytest.Case{
			Name:     c.name,
			Raw:      marshalServer(c),
			Options:  c.decodeOptions(),
			WantName: c.msg.GetName(),
			WantErr:  c.wantErr,
			WantDeps: c.wantDeps,
		})
	}
	registrytest.Run(t, lds.Type, cases)
}

// TestServerDecoderAlone checks that the decoder keeps a server Listener
// the validator rejects, for tools to show.
func TestServerDecoderAlone(t *testing.T) {
	msg := server(nil, chain("a", nil), chain("b", nil))
	raw, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := lds.Type.Decoder.Decode(raw, registry.DecodeOptions{})
	if err != nil {
		t.Fatalf("Decoder.Decode: %v", err)
	}
	l := res.Resource.(*lds.Listener)
	if !l.IsServer() || len(l.Server.FilterChains) != 2 {
		t.Fatalf("decoded %+v, want a server with two chains", l)
	}
	if err := lds.Type.Validator.Validate(l, registry.DecodeOptions{}); err == nil || !strings.Contains(err.Error(), "overlaps filter_chains[0]") {
		t.Errorf("Validate = %v, want the overlap", err)
	}
}

func TestServerString(t *testing.T) {
	c := istioCases()[0]
	res, err := lds.Type.Decode(marshalServer(c), serverOpts)
	if err != nil {
		t.Fatal(err)
	}
	const want = `server 0.0.0.0:50051: chain[0] "inbound-mtls" (mTLS) inline routes`
	if got := res.Resource.(*lds.Listener).String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
