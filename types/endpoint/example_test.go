package endpoint_test

import (
	"fmt"
	"net/netip"

	"github.com/xdsengine/xdsengine/types/endpoint"
)

func ExampleEndpoint_Usable() {
	for _, ep := range []endpoint.Endpoint{
		{Address: netip.MustParseAddrPort("10.0.0.1:443"), Weight: 1, HealthStatus: endpoint.HealthHealthy},
		{Address: netip.MustParseAddrPort("10.0.0.2:443"), Weight: 1, HealthStatus: endpoint.HealthDraining},
		{Address: netip.MustParseAddrPort("10.0.0.3:443"), Weight: 1, HealthStatus: endpoint.HealthStatus(42)},
	} {
		fmt.Println(ep.Address, ep.HealthStatus, ep.Usable())
	}
	// Output:
	// 10.0.0.1:443 HEALTHY true
	// 10.0.0.2:443 DRAINING false
	// 10.0.0.3:443 HealthStatus(42) false
}
