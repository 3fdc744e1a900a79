package cds

import (
	"time"

	"github.com/xdsengine/xdsengine/registry"

	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// outlierDetection applies gRFC A50: durations valid and not negative,
// percentages at most 100, and an ejection algorithm switched off when
// its enforcement percentage is 0 (success rate) or unset or 0 (failure
// percentage). Unset fields get A50's defaults, so readers see the values
// in effect.
func outlierDetection(od *clusterpb.OutlierDetection, errs *registry.FieldErrors) *OutlierDetection {
	if od == nil {
		return nil
	}
	const at = "outlier_detection"
	out := &OutlierDetection{
		Interval:           10 * time.Second,
		BaseEjectionTime:   30 * time.Second,
		MaxEjectionTime:    300 * time.Second,
		MaxEjectionPercent: 10,
	}
	if d := od.GetInterval(); d != nil {
		out.Interval = nonNegativeDuration(d, at+".interval", errs)
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		out.BaseEjectionTime = nonNegativeDuration(d, at+".base_ejection_time", errs)
	}
	if d := od.GetMaxEjectionTime(); d != nil {
		out.MaxEjectionTime = nonNegativeDuration(d, at+".max_ejection_time", errs)
	}
	out.MaxEjectionPercent = percent(od.GetMaxEjectionPercent(), 10, at+".max_ejection_percent", errs)

	if enforcing := percent(od.GetEnforcingSuccessRate(), 100, at+".enforcing_success_rate", errs); enforcing != 0 {
		out.SuccessRate = &SuccessRateEjection{
			StdevFactor:           uint32Or(od.GetSuccessRateStdevFactor(), 1900),
			EnforcementPercentage: enforcing,
			MinimumHosts:          uint32Or(od.GetSuccessRateMinimumHosts(), 5),
			RequestVolume:         uint32Or(od.GetSuccessRateRequestVolume(), 100),
		}
	}
	threshold := percent(od.GetFailurePercentageThreshold(), 85, at+".failure_percentage_threshold", errs)
	if enforcing := percent(od.GetEnforcingFailurePercentage(), 0, at+".enforcing_failure_percentage", errs); enforcing != 0 {
		out.FailurePercentage = &FailurePercentageEjection{
			Threshold:             threshold,
			EnforcementPercentage: enforcing,
			MinimumHosts:          uint32Or(od.GetFailurePercentageMinimumHosts(), 5),
			RequestVolume:         uint32Or(od.GetFailurePercentageRequestVolume(), 50),
		}
	}
	return out
}

func percent(v *wrapperspb.UInt32Value, def uint32, field string, errs *registry.FieldErrors) uint32 {
	if v == nil {
		return def
	}
	if v.GetValue() > 100 {
		errs.Addf(field, "%d must be at most 100", v.GetValue())
	}
	return v.GetValue()
}

func uint32Or(v *wrapperspb.UInt32Value, def uint32) uint32 {
	if v == nil {
		return def
	}
	return v.GetValue()
}
