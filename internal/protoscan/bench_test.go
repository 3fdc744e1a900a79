package protoscan_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// response is a DiscoveryResponse-shaped message of n resources (field 2,
// each an Any of a type URL and a 60-byte value) between a version and a
// type URL.
func response(n int) []byte {
	value := make([]byte, 60)
	anyMsg := cat(str(1, "type.googleapis.com/envoy.config.cluster.v3.Cluster"), protowire.AppendBytes(tag(2, protowire.BytesType), value))
	b := str(1, "v1")
	for range n {
		b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), anyMsg)
	}
	return cat(b, str(4, "type.googleapis.com/envoy.config.cluster.v3.Cluster"), str(5, "nonce"))
}

// BenchmarkFields walks the fields of a response of 100,000 resources
// and each resource's two fields, the way engine/internal/wire's envelope
// does: with Iter, with Next, and with protowire's Consume calls for
// comparison (the per-resource figure is ns/op over 100,000).
//
//	go test -run '^$' -bench BenchmarkFields ./internal/protoscan/
func BenchmarkFields(b *testing.B) {
	msg := response(100_000)
	walks := []struct {
		name string
		walk func([]byte) int
	}{
		{"Iter", func(b []byte) int {
			n := 0
			it := protoscan.Fields(b)
			for it.Next() {
				if it.Is(2, protoscan.BytesType) {
					inner := protoscan.Fields(it.Value)
					for inner.Next() {
						n += len(inner.Value)
					}
				}
			}
			return n
		}},
		{"Next", func(b []byte) int {
			n := 0
			for len(b) > 0 {
				f, m, err := protoscan.Next(b)
				if err != nil {
					return -1
				}
				b = b[m:]
				if f.Is(2, protoscan.BytesType) {
					for v := f.Value; len(v) > 0; {
						g, k, err := protoscan.Next(v)
						if err != nil {
							return -1
						}
						v, n = v[k:], n+len(g.Value)
					}
				}
			}
			return n
		}},
		{"protowire", func(b []byte) int {
			n := 0
			for len(b) > 0 {
				num, typ, m := protowire.ConsumeTag(b)
				if m < 0 {
					return -1
				}
				b = b[m:]
				if num != 2 || typ != protowire.BytesType {
					b = b[protowire.ConsumeFieldValue(num, typ, b):]
					continue
				}
				v, m := protowire.ConsumeBytes(b)
				b = b[m:]
				for len(v) > 0 {
					_, _, k := protowire.ConsumeTag(v)
					w, l := protowire.ConsumeBytes(v[k:])
					v, n = v[k+l:], n+len(w)
				}
			}
			return n
		}},
	}
	want := walks[2].walk(msg)
	for _, w := range walks {
		b.Run(w.name, func(b *testing.B) {
			for b.Loop() {
				if got := w.walk(msg); got != want {
					b.Fatal(fmt.Sprint(got, " bytes of values, want ", want))
				}
			}
		})
	}
}
