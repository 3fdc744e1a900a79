package protoscan_test

import (
	"fmt"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// ExampleFields reads the name (field 1) and a port (field 3) of a
// message, as a walker beside its type does: what it does not expect,
// it leaves to proto.Unmarshal.
func ExampleFields() {
	msg := protoscan.AppendStringField(nil, 1, "backend")
	msg = protoscan.AppendVarint(protoscan.AppendTag(msg, 3, protoscan.VarintType), 8080)

	var name string
	var port uint64
	var seen protoscan.FieldSet
	it := protoscan.Fields(msg)
	for it.Next() {
		if !seen.Add(it.Num) {
			fmt.Println("a field sent twice: proto.Unmarshal's affair")
			return
		}
		switch {
		case it.Is(1, protoscan.BytesType) && protoscan.ValidUTF8(it.Value):
			name = string(it.Value)
		case it.Is(3, protoscan.VarintType):
			var ok bool
			if port, ok = it.VarintAtMost(65535); !ok {
				fmt.Println("port out of range")
				return
			}
		default:
			fmt.Println("not the usual shape")
			return
		}
	}
	if it.Err() != nil {
		fmt.Println(it.Err())
		return
	}
	fmt.Println(name, port)
	// Output: backend 8080
}

// ExampleCutShortBytes splits a length-delimited value the inlined way,
// and falls back to Next when its length prefix is longer.
func ExampleCutShortBytes() {
	field := protoscan.AppendStringField(nil, 2, "type.googleapis.com/envoy.config.cluster.v3.Cluster")
	if v, rest, ok := protoscan.CutShortBytes(field[1:]); ok {
		fmt.Println(string(v), len(rest))
	}
	// Output: type.googleapis.com/envoy.config.cluster.v3.Cluster 0
}
