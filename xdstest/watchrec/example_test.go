package watchrec_test

import (
	"fmt"
	"log"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/builtin"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/xdstest"
	"github.com/xdsengine/xdsengine/xdstest/watchrec"
)

// Example records a cluster's first delivery. A test reads it with
// rec.NextChanged(t) instead, which fails the test when nothing, or
// another kind of event, arrives.
func Example() {
	srv, err := xdstest.Start(xdstest.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	srv.Set(xdstest.R("backend", xdstest.Cluster("backend", "backend-eds")))
	bs, err := bootstrap.Parse(srv.Bootstrap(xdstest.BootstrapOptions{}))
	if err != nil {
		log.Fatal(err)
	}
	e, err := engine.New(engine.Config{Bootstrap: bs, Registry: builtin.Registry()})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	rec := watchrec.New()
	defer e.Watch(cds.TypeURL, "backend", rec)()
	ev := <-rec.Events()
	fmt.Println(ev.Resource.(*cds.Cluster).EDSName(), ev.Err)
	// Output: backend-eds <nil>
}
