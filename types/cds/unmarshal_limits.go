package cds

import (
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/internal/protoscan"
)

// Field numbers of the Cluster's limits that unmarshalCluster reads
// itself when they have the usual shape.
const (
	clusterConnectTimeout   = 4
	clusterCircuitBreakers  = 10
	clusterOutlierDetection = 19
	breakersThresholds      = 1 // CircuitBreakers.thresholds
)

// Field numbers of CircuitBreakers.Thresholds.
const (
	thresholdPriority           = 1
	thresholdMaxConnections     = 2
	thresholdMaxPendingRequests = 3
	thresholdMaxRequests        = 4
	thresholdMaxRetries         = 5
	thresholdTrackRemaining     = 6
	thresholdMaxConnectionPools = 7
)

// limitField is one of the limits as splitCluster found it: its value's
// bytes, and the whole field's, which go to proto.Unmarshal if the value
// is not of the usual shape.
type limitField struct {
	present      bool
	value, field []byte
}

// limitMessages are the messages a decode target fills from the limits'
// bytes and links into its Cluster: proto.Unmarshal allocates each of
// them, every wrapper included, through reflection. What does not fit
// (more thresholds or wrappers than there is room for) is left to proto.
type limitMessages struct {
	breakers      clusterpb.CircuitBreakers
	thresholds    [4]clusterpb.CircuitBreakers_Thresholds
	thresholdPtrs [4]*clusterpb.CircuitBreakers_Thresholds
	outlier       clusterpb.OutlierDetection

	uint32s   [48]wrapperspb.UInt32Value
	durations [8]durationpb.Duration
	bools     [4]wrapperspb.BoolValue
	// How many of each are in use by the Cluster being decoded.
	nUint32, nDuration, nBool int
}

// readLimits reads the limits splitCluster found into t's messages and
// links them into t.pb; a limit of another shape is appended to rest for
// proto.Unmarshal instead. It returns rest.
func (t *decodeTarget) readLimits(h *clusterFields, rest []byte) []byte {
	l := &t.limits
	l.nUint32, l.nDuration, l.nBool = 0, 0, 0
	if f := &h.connectTimeout; f.present {
		if d, ok := l.readDuration(f.value); ok {
			h.setConnectTimeout = d
		} else {
			rest = append(rest, f.field...)
		}
	}
	if f := &h.circuitBreakers; f.present {
		if l.readCircuitBreakers(f.value) {
			h.setCircuitBreakers = true
		} else {
			rest = append(rest, f.field...)
		}
	}
	if f := &h.outlierDetection; f.present {
		if l.readOutlierDetection(f.value) {
			h.setOutlierDetection = true
		} else {
			rest = append(rest, f.field...)
		}
	}
	return rest
}

// linkLimits links the limits readLimits read into pb.
func (t *decodeTarget) linkLimits(h *clusterFields) {
	pb, l := &t.pb, &t.limits
	if h.setConnectTimeout != nil {
		pb.ConnectTimeout = h.setConnectTimeout
	}
	if h.setCircuitBreakers {
		pb.CircuitBreakers = &l.breakers
	}
	if h.setOutlierDetection {
		pb.OutlierDetection = &l.outlier
	}
}

// readCircuitBreakers reads CircuitBreakers of thresholds only, each of
// the usual shape, into l.breakers.
func (l *limitMessages) readCircuitBreakers(b []byte) bool {
	n := 0
	it := protoscan.Fields(b)
	for it.Next() {
		if !it.Is(breakersThresholds, protoscan.BytesType) || n == len(l.thresholds) || !l.readThreshold(it.Value, &l.thresholds[n]) {
			return false
		}
		l.thresholdPtrs[n] = &l.thresholds[n]
		n++
	}
	if it.Err() != nil {
		return false
	}
	l.breakers = clusterpb.CircuitBreakers{}
	if n > 0 {
		l.breakers.Thresholds = l.thresholdPtrs[:n:n]
	}
	return true
}

// readThreshold reads a Thresholds of priority, the UInt32Value limits
// and track_remaining, each at most once; a retry budget, or anything
// else, is not the usual shape.
func (l *limitMessages) readThreshold(b []byte, th *clusterpb.CircuitBreakers_Thresholds) bool {
	*th = clusterpb.CircuitBreakers_Thresholds{}
	var seen protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		num := it.Num
		if num > thresholdMaxConnectionPools || !seen.Add(num) {
			return false
		}
		switch num {
		case thresholdPriority, thresholdTrackRemaining:
			if it.Type != protoscan.VarintType {
				return false
			}
			if num == thresholdPriority {
				th.Priority = corepb.RoutingPriority(int32(it.Varint()))
			} else {
				th.TrackRemaining = it.Bool()
			}
			continue
		}
		var target **wrapperspb.UInt32Value
		switch num {
		case thresholdMaxConnections:
			target = &th.MaxConnections
		case thresholdMaxPendingRequests:
			target = &th.MaxPendingRequests
		case thresholdMaxRequests:
			target = &th.MaxRequests
		case thresholdMaxRetries:
			target = &th.MaxRetries
		case thresholdMaxConnectionPools:
			target = &th.MaxConnectionPools
		default:
			return false
		}
		if it.Type != protoscan.BytesType {
			return false
		}
		if *target = l.readUInt32Value(it.Value); *target == nil {
			return false
		}
	}
	return it.Err() == nil
}

// readOutlierDetection reads an OutlierDetection whose fields are
// wrappers, durations and split_external_local_origin_errors, each at
// most once; monitors, or anything else, are not the usual shape.
func (l *limitMessages) readOutlierDetection(b []byte) bool {
	od := &l.outlier
	*od = clusterpb.OutlierDetection{}
	var seen protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		num := it.Num
		if num >= 32 || !seen.Add(num) {
			return false
		}
		if num == 12 { // split_external_local_origin_errors
			if it.Type != protoscan.VarintType {
				return false
			}
			od.SplitExternalLocalOriginErrors = it.Bool()
			continue
		}
		if it.Type != protoscan.BytesType {
			return false
		}
		if u := outlierUint32(od, num); u != nil {
			if *u = l.readUInt32Value(it.Value); *u == nil {
				return false
			}
			continue
		}
		if d := outlierDuration(od, num); d != nil {
			if *d, _ = l.readDuration(it.Value); *d == nil {
				return false
			}
			continue
		}
		if w := outlierBool(od, num); w != nil {
			if *w = l.readBoolValue(it.Value); *w == nil {
				return false
			}
			continue
		}
		return false
	}
	return it.Err() == nil
}

// outlierUint32 is OutlierDetection's UInt32Value field num, or nil.
func outlierUint32(od *clusterpb.OutlierDetection, num protoscan.Number) **wrapperspb.UInt32Value {
	switch num {
	case 1:
		return &od.Consecutive_5Xx
	case 4:
		return &od.MaxEjectionPercent
	case 5:
		return &od.EnforcingConsecutive_5Xx
	case 6:
		return &od.EnforcingSuccessRate
	case 7:
		return &od.SuccessRateMinimumHosts
	case 8:
		return &od.SuccessRateRequestVolume
	case 9:
		return &od.SuccessRateStdevFactor
	case 10:
		return &od.ConsecutiveGatewayFailure
	case 11:
		return &od.EnforcingConsecutiveGatewayFailure
	case 13:
		return &od.ConsecutiveLocalOriginFailure
	case 14:
		return &od.EnforcingConsecutiveLocalOriginFailure
	case 15:
		return &od.EnforcingLocalOriginSuccessRate
	case 16:
		return &od.FailurePercentageThreshold
	case 17:
		return &od.EnforcingFailurePercentage
	case 18:
		return &od.EnforcingFailurePercentageLocalOrigin
	case 19:
		return &od.FailurePercentageMinimumHosts
	case 20:
		return &od.FailurePercentageRequestVolume
	}
	return nil
}

// outlierDuration is OutlierDetection's Duration field num, or nil.
func outlierDuration(od *clusterpb.OutlierDetection, num protoscan.Number) **durationpb.Duration {
	switch num {
	case 2:
		return &od.Interval
	case 3:
		return &od.BaseEjectionTime
	case 21:
		return &od.MaxEjectionTime
	case 22:
		return &od.MaxEjectionTimeJitter
	}
	return nil
}

// outlierBool is OutlierDetection's BoolValue field num, or nil.
func outlierBool(od *clusterpb.OutlierDetection, num protoscan.Number) **wrapperspb.BoolValue {
	switch num {
	case 23:
		return &od.SuccessfulActiveHealthCheckUnejectHost
	case 25:
		return &od.AlwaysEjectOneHost
	case 26:
		return &od.DetectDegradedHosts
	}
	return nil
}

// readUInt32Value reads a UInt32Value whose value comes at most once and
// alone, into the next of l's; nil if it is not of that shape or l has
// none left.
func (l *limitMessages) readUInt32Value(b []byte) *wrapperspb.UInt32Value {
	v, ok := readWrappedVarint(b)
	if !ok || l.nUint32 == len(l.uint32s) {
		return nil
	}
	w := &l.uint32s[l.nUint32]
	l.nUint32++
	*w = wrapperspb.UInt32Value{Value: uint32(v)}
	return w
}

// readBoolValue is readUInt32Value for a BoolValue.
func (l *limitMessages) readBoolValue(b []byte) *wrapperspb.BoolValue {
	v, ok := readWrappedVarint(b)
	if !ok || l.nBool == len(l.bools) {
		return nil
	}
	w := &l.bools[l.nBool]
	l.nBool++
	*w = wrapperspb.BoolValue{Value: v != 0}
	return w
}

// readWrappedVarint reads the message of a wrapper of a varint: field 1,
// a varint, at most once and nothing else (its absence is zero).
func readWrappedVarint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	f, n, err := protoscan.Next(b)
	if err != nil || !f.Is(1, protoscan.VarintType) || n != len(b) {
		return 0, false
	}
	return f.Varint(), true
}

// readDuration reads a Duration of seconds and nanos, each at most once,
// into the next of l's; nil and false if it is not of that shape or l
// has none left.
func (l *limitMessages) readDuration(b []byte) (*durationpb.Duration, bool) {
	var seconds, nanos uint64
	var seen protoscan.FieldSet
	it := protoscan.Fields(b)
	for it.Next() {
		if it.Type != protoscan.VarintType || (it.Num != 1 && it.Num != 2) || !seen.Add(it.Num) {
			return nil, false
		}
		if it.Num == 1 {
			seconds = it.Varint()
		} else {
			nanos = it.Varint()
		}
	}
	if it.Err() != nil || l.nDuration == len(l.durations) {
		return nil, false
	}
	d := &l.durations[l.nDuration]
	l.nDuration++
	*d = durationpb.Duration{Seconds: int64(seconds), Nanos: int32(nanos)}
	return d, true
}
