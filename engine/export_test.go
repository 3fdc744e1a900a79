package engine

import (
	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// coldStartFloorKept holds ColdStartFloor's last map past its return,
// as the cache holds its entries: what it allocated is the collector's
// to mark until the next call drops it.
var coldStartFloorKept map[string]*entry

// ColdStartFloor does for names only what caching them by name takes,
// and nothing of the protocol: an entry for each (the cache's own type)
// in a map grown from empty, then the list of the names and one request
// naming them all, encoded. It returns the request's size.
// BenchmarkSotWColdStartFloor times it: a floor under the work a cold
// start adds to that of a response (scenario (a)).
func ColdStartFloor(typeURL string, names []string) int {
	m := make(map[string]*entry)
	for _, name := range names {
		m[name] = &entry{name: name}
	}
	list := make([]string, 0, len(m))
	for name := range m {
		list = append(list, name)
	}
	b, err := proto.Marshal(&discoverypb.DiscoveryRequest{TypeUrl: typeURL, ResourceNames: list})
	if err != nil {
		panic(err)
	}
	coldStartFloorKept = m
	return len(b)
}
