package relaytest_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/relay/relaytest"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
)

// Example puts three clients behind a relay: the upstream serves one
// stream whatever their number. A test uses NewServer, closed with it.
func Example() {
	up, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer up.Close()
	up.Set(xdstest.R("backend", xdstest.Cluster("backend", "backend-eds")))

	r, err := relaytest.Start(relaytest.Config(up.Bootstrap(xdstest.BootstrapOptions{NodeID: "relay"})), relaytest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	got := make(chan string, 3)
	for _, id := range []string{"a", "b", "c"} {
		bs, err := bootstrap.Parse(r.Bootstrap(relaytest.BootstrapOptions{NodeID: id, Cluster: "blue", Delta: id == "c"}))
		if err != nil {
			log.Fatal(err)
		}
		c, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		defer cds.Watch(c, "backend", engine.TypedWatcherFuncs[*cds.Cluster]{
			ResourceChanged: func(cl *cds.Cluster, err error, done func()) {
				if err == nil {
					got <- cl.EDSName()
				}
				done()
			},
		})()
	}
	for range 3 {
		fmt.Println(<-got)
	}
	fmt.Println("upstream streams:", up.StreamsOpened())
	// Output:
	// backend-eds
	// backend-eds
	// backend-eds
	// upstream streams: 1
}
