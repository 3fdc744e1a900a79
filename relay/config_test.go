package relay_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/relay"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

func TestNewRejects(t *testing.T) {
	bs := &bootstrap.Bootstrap{Servers: []bootstrap.ServerConfig{bootstrap.InsecureServer("127.0.0.1:1")}}
	for _, tc := range []struct {
		name string
		cfg  relay.Config
		want string
	}{
		{"no bootstrap", relay.Config{Upstream: engine.Config{Registry: builtin.Registry()}}, "Config.Upstream.Bootstrap is required"},
		{"no registry", relay.Config{Upstream: engine.Config{Bootstrap: bs}}, "Config.Upstream.Registry is required"},
		{"negative linger", relay.Config{Upstream: engine.Config{Bootstrap: bs, Registry: builtin.Registry()}, Linger: -1}, "Config.Linger must not be negative"},
		{"no server", relay.Config{Upstream: engine.Config{Bootstrap: &bootstrap.Bootstrap{}, Registry: builtin.Registry()}}, "server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := relay.New(tc.cfg)
			if err == nil {
				r.Close()
				t.Fatalf("New succeeded, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q in it", err, tc.want)
			}
		})
	}
}

// rawOnly is a resource that only has its bytes.
type rawOnly []byte

func (r rawOnly) Raw() []byte { return r }

func TestDefaultEncoder(t *testing.T) {
	msg := xdstest.Cluster("c", "e")
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := cds.Type.Decode(want, registry.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	enc := relay.DefaultEncoder()
	for _, tc := range []struct {
		name string
		r    registry.Resource
	}{
		{"raw resource: its bytes", rawOnly(want)},
		{"built-in type: its Proto", decoded.Resource},
		{"proto message", msg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := enc.Encode(cds.TypeURL, tc.r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("Encode = %x, %v; want %x", got, err, want)
			}
		})
	}
	if _, err := enc.Encode(cds.TypeURL, struct{}{}); err == nil || !strings.Contains(err.Error(), "has no Raw or Proto method") {
		t.Errorf("Encode of a struct{}: %v, want an error saying it has no Raw or Proto method", err)
	}
}
