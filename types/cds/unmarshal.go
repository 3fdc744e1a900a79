package cds

import (
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// Field numbers of envoy.config.cluster.v3.Cluster, of its
// EdsClusterConfig and of envoy.config.core.v3.ConfigSource that
// unmarshalCluster reads itself.
const (
	clusterName            = 1
	clusterType            = 2  // in the oneof cluster_discovery_type
	clusterEDSConfig       = 3  // eds_cluster_config
	clusterLBPolicy        = 6  // lb_policy
	clusterClusterType     = 38 // cluster_type, the other member of the oneof
	edsConfigSource        = 1  // EdsClusterConfig.eds_config
	edsServiceName         = 2  // EdsClusterConfig.service_name
	configSourceADS        = 3  // ConfigSource.ads, in the oneof config_source_specifier
	configSourceAPIVersion = 6  // ConfigSource.resource_api_version
)

// maxRestKept bounds the buffer for the other fields that a decode
// target keeps for the next.
const maxRestKept = 4 << 10

// decodeTarget is what decoding a Cluster needs, recycled (decodeTargets):
// a Cluster message is some 600 bytes, one per resource of a response, and
// nothing of the decoded cds.Cluster points into it or into the
// sub-messages below, which unmarshalCluster links into it.
type decodeTarget struct {
	pb clusterpb.Cluster
	// unmarshalled says that proto.Unmarshal wrote to pb, which must then
	// be reset whole; otherwise only the fields unmarshalCluster set are.
	unmarshalled bool
	rest         []byte // the bytes of the fields left to proto.Unmarshal

	typ    clusterpb.Cluster_Type
	eds    clusterpb.Cluster_EdsClusterConfig
	source corepb.ConfigSource
	ads    corepb.ConfigSource_Ads
	adsMsg corepb.AggregatedConfigSource
	limits limitMessages
}

// reset empties pb for the next decode.
func (t *decodeTarget) reset() {
	if t.unmarshalled {
		proto.Reset(&t.pb)
		t.unmarshalled = false
		return
	}
	t.pb.Name, t.pb.ClusterDiscoveryType, t.pb.LbPolicy, t.pb.EdsClusterConfig = "", nil, 0, nil
	t.pb.ConnectTimeout, t.pb.CircuitBreakers, t.pb.OutlierDetection = nil, nil, nil
}

// unmarshalCluster fills t.pb, which is empty, from raw exactly as
// proto.Unmarshal would (FuzzUnmarshalCluster checks it), but faster for
// the fields every EDS cluster has: its name, type, lb_policy and an
// eds_cluster_config that names an ADS config source and a service name;
// and for the limits many have: a connect_timeout, circuit_breakers of
// thresholds and an outlier_detection of wrappers and durations
// (unmarshal_limits.go). Those are read here, into messages t keeps for
// the next decode; the rest of the bytes, usually nothing, go through
// proto.Unmarshal. Two of the fields are oneof members (type, and the
// config source's ads), which proto decodes through reflection, at more
// than the cost of the rest of such a Cluster, and proto allocates every
// wrapper of the limits.
//
// Anything out of the ordinary (a field read here sent twice or with
// another wire type, cluster_type with type, a string that is not UTF-8,
// bytes that do not parse) is left to proto.Unmarshal of the whole, which
// then has the last word on it, errors included.
func (t *decodeTarget) unmarshalCluster(raw []byte) error {
	pb := &t.pb
	// h is filled in place, here and below: a struct this large returned
	// and then copied costs a stall per Cluster (the copy reads back wide
	// what was just written narrow).
	var h clusterFields
	ok := t.split(raw, &h)
	if cap(h.rest) <= maxRestKept {
		t.rest = h.rest[:0]
	}
	if !ok {
		t.unmarshalled = true
		return proto.Unmarshal(raw, pb)
	}
	if len(h.rest) > 0 {
		t.unmarshalled = true
		if err := proto.Unmarshal(h.rest, pb); err != nil {
			// proto's error, in its words, about the whole.
			proto.Reset(pb)
			return proto.Unmarshal(raw, pb)
		}
	}
	if h.seen.Has(clusterName) {
		pb.Name = string(h.name)
	}
	if h.seen.Has(clusterType) {
		t.typ = clusterpb.Cluster_Type{Type: clusterpb.Cluster_DiscoveryType(int32(h.typ))}
		pb.ClusterDiscoveryType = &t.typ
	}
	if h.seen.Has(clusterLBPolicy) {
		pb.LbPolicy = clusterpb.Cluster_LbPolicy(int32(h.lbPolicy))
	}
	if e := &h.eds; e.read {
		t.eds = clusterpb.Cluster_EdsClusterConfig{}
		t.eds.ServiceName = string(e.serviceName)
		if e.hasSource {
			t.adsMsg = corepb.AggregatedConfigSource{}
			t.ads = corepb.ConfigSource_Ads{Ads: &t.adsMsg}
			t.source = corepb.ConfigSource{ConfigSourceSpecifier: &t.ads, ResourceApiVersion: corepb.ApiVersion(int32(e.version))}
			t.eds.EdsConfig = &t.source
		}
		pb.EdsClusterConfig = &t.eds
	}
	t.linkLimits(&h)
	return nil
}

// split reads what it can of raw into h, which is zero (splitCluster,
// readLimits); false if proto.Unmarshal must read the whole.
func (t *decodeTarget) split(raw []byte, h *clusterFields) bool {
	ok := splitCluster(raw, t.rest[:0], h)
	if ok {
		h.rest = t.readLimits(h, h.rest)
	}
	return ok
}

// clusterFields are the fields splitCluster read, and the bytes of the
// others.
type clusterFields struct {
	seen          protoscan.FieldSet // the fields read
	clusterType   bool               // cluster_type was sent (left to proto)
	name          []byte
	typ, lbPolicy uint64
	eds           edsFields
	rest          []byte

	connectTimeout, circuitBreakers, outlierDetection limitField
	// What readLimits read, to be linked into the Cluster.
	setConnectTimeout                       *durationpb.Duration
	setCircuitBreakers, setOutlierDetection bool
}

// limit is the limit field num (connect_timeout, circuit_breakers or
// outlier_detection).
func (h *clusterFields) limit(num protoscan.Number) *limitField {
	switch num {
	case clusterConnectTimeout:
		return &h.connectTimeout
	case clusterCircuitBreakers:
		return &h.circuitBreakers
	}
	return &h.outlierDetection
}

// edsFields is an EdsClusterConfig of the usual shape.
type edsFields struct {
	read, hasSource, hasVersion, hasName bool
	version                              uint64
	serviceName                          []byte
}

// splitCluster reads the top level of a Cluster into h, which is zero. It
// reports false when proto.Unmarshal must read the whole instead.
func splitCluster(b []byte, rest []byte, h *clusterFields) bool {
	h.rest = rest
	it := protoscan.Fields(b)
	for it.Next() {
		switch num := it.Num; {
		case it.Is(clusterName, protoscan.BytesType):
			if !protoscan.ValidUTF8(it.Value) {
				return false
			}
			h.name = it.Value
		case it.Is(clusterType, protoscan.VarintType):
			h.typ = it.Varint()
		case it.Is(clusterLBPolicy, protoscan.VarintType):
			h.lbPolicy = it.Varint()
		case it.Is(clusterEDSConfig, protoscan.BytesType):
			h.eds = edsFields{}
			if splitEDSConfig(it.Value, &h.eds); !h.eds.read {
				// Not of the usual shape: proto reads it, with the rest.
				h.rest = append(h.rest, it.Raw()...)
			}
		case (num == clusterConnectTimeout || num == clusterCircuitBreakers || num == clusterOutlierDetection) && it.Type == protoscan.BytesType:
			lf := h.limit(num) // every field set: no struct to copy in
			lf.present, lf.value, lf.field = true, it.Value, it.Raw()
		case num == clusterName || num == clusterType || num == clusterLBPolicy || num == clusterEDSConfig ||
			num == clusterConnectTimeout || num == clusterCircuitBreakers || num == clusterOutlierDetection:
			// Another wire type: proto keeps it as an unknown field, and
			// may have seen the same number as a known one too.
			return false
		default:
			h.clusterType = h.clusterType || num == clusterClusterType
			h.rest = append(h.rest, it.Raw()...)
			continue
		}
		if !h.seen.Add(it.Num) {
			return false // the last one wins, or messages merge: proto's affair
		}
	}
	if it.Err() != nil {
		return false
	}
	if h.seen.Has(clusterType) && h.clusterType {
		return false // type and cluster_type: the one sent last wins
	}
	return true
}

// splitEDSConfig reads into e, which is zero, an EdsClusterConfig whose
// eds_config is an empty ads (with, perhaps, a resource_api_version), and
// whose fields come at most once each; for any other, e is left zero.
func splitEDSConfig(b []byte, e *edsFields) {
	it := protoscan.Fields(b)
	for it.Next() {
		switch {
		case it.Is(edsServiceName, protoscan.BytesType) && !e.hasName && protoscan.ValidUTF8(it.Value):
			e.serviceName, e.hasName = it.Value, true
		case it.Is(edsConfigSource, protoscan.BytesType) && !e.hasSource && splitADSSource(it.Value, e):
			e.hasSource = true
		default:
			*e = edsFields{}
			return
		}
	}
	if it.Err() != nil {
		*e = edsFields{}
		return
	}
	e.read = true
}

// splitADSSource reads a ConfigSource of an empty ads and, perhaps, a
// resource_api_version, into e; false for any other.
func splitADSSource(b []byte, e *edsFields) bool {
	ads := false
	it := protoscan.Fields(b)
	for it.Next() {
		switch {
		case it.Is(configSourceADS, protoscan.BytesType) && !ads && len(it.Value) == 0:
			ads = true
		case it.Is(configSourceAPIVersion, protoscan.VarintType) && !e.hasVersion:
			e.version, e.hasVersion = it.Varint(), true
		default:
			return false
		}
	}
	return ads && it.Err() == nil
}
