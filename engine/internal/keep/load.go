package keep

import (
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/internal/metrics"
	"github.com/xdsengine/xdsengine/engine/internal/setup"
	"github.com/xdsengine/xdsengine/features"
	"github.com/xdsengine/xdsengine/registry"
)

// Stored is a resource a store gave back, decoded and valid under the
// registry of the day: what the engine serves while no server of its
// authority answers.
type Stored struct {
	Value             registry.Resource
	Raw               []byte
	Version           string
	Server            *bootstrap.ServerConfig // the authority's entry of the server that sent it
	Received, Expires time.Time               // Expires is zero when the server sent no ttl
}

// Servable reports whether s may still be served at now: it is no older
// than maxAge, and the ttl its server sent has not run out.
func (s *Stored) Servable(now time.Time, maxAge time.Duration) bool {
	return !Expired(s.Received, s.Expires, now, maxAge)
}

// Expired reports whether a resource received at received, with a ttl
// running out at expires (zero: none), is past serving at now: older than
// maxAge, or its ttl run out. The store keeps no such resource.
func Expired(received, expires, now time.Time, maxAge time.Duration) bool {
	return now.Sub(received) > maxAge || !expires.IsZero() && now.After(expires)
}

// MaxAge is how old a stored resource may be served, from the
// configured age: zero means def, a negative one no limit.
func MaxAge(configured, def time.Duration) time.Duration {
	switch {
	case configured < 0:
		return math.MaxInt64
	case configured == 0:
		return def
	}
	return configured
}

// Name is a stored resource's type and cache key within its authority.
type Name struct{ TypeURL, Key string }

// Decoder decodes what a store held as the engine would decode it from
// its server now: a resource is served only if it still validates, and
// comes from a server its authority still lists.
type Decoder[A comparable] struct {
	Types map[string]*registry.ResourceType // the types on under the switches
	// Resolve returns a name's authority, that authority's servers and the
	// name's cache key (gRFC A47), or why the name has none.
	Resolve func(typeURL, name string) (A, []bootstrap.ServerConfig, string, error)
	// Options are the decode options of every resource, but for the
	// wrapper name and server, which Decode sets.
	Options registry.DecodeOptions
	// Known are the server features the engine knows (setup.Known).
	Known []features.ServerFeature
	// Metrics and Log hear of what Load loses.
	Metrics *metrics.Recorder
	Log     *slog.Logger
}

// Load decodes what a store's load returned, by authority, then type and
// cache key: rs, the count of corrupt resources left out, or why the load
// failed. What is lost is counted and logged: a failed load, the corrupt
// resources, each one Decode drops.
func (d *Decoder[A]) Load(rs []Change, corrupt int, err error) map[A]map[Name]*Stored {
	if err != nil {
		d.Metrics.Add(metrics.StoreFailures, 1, "", "")
		d.Log.Warn("xDS last-known-good store: load failed; starting without it", "error", err)
		return nil
	}
	d.Metrics.Add(metrics.Loads, 1, "", "")
	if corrupt > 0 {
		d.Metrics.Add(metrics.Dropped, corrupt, "", "")
		d.Log.Warn("xDS last-known-good store: corrupt resources dropped", "count", corrupt)
	}
	out := map[A]map[Name]*Stored{}
	for _, r := range rs {
		a, name, s, err := d.Decode(r)
		if err != nil {
			d.Metrics.Add(metrics.Dropped, 1, r.Server, r.TypeURL)
			d.Log.Warn("xDS last-known-good store: resource dropped", "type", r.TypeURL, "name", r.Name, "error", err)
			continue
		}
		if out[a] == nil {
			out[a] = map[Name]*Stored{}
		}
		out[a][name] = s
	}
	return out
}

// Decode decodes one stored resource; an error says why it is not
// served: its type is gone, switched off or not stored, its name no
// longer resolves, its server is no longer its authority's, its bytes do
// not validate, or they are of another resource.
func (d *Decoder[A]) Decode(r Change) (a A, name Name, s *Stored, err error) {
	typ := d.Types[r.TypeURL]
	if typ == nil || typ.NotStored {
		return a, name, nil, fmt.Errorf("type is not registered, switched off or not stored")
	}
	a, servers, key, err := d.Resolve(r.TypeURL, r.Name)
	if err != nil {
		return a, name, nil, err
	}
	i := slices.IndexFunc(servers, func(s bootstrap.ServerConfig) bool { return s.URI == r.Server })
	if i < 0 {
		return a, name, nil, fmt.Errorf("server %s is not one of its authority's", r.Server)
	}
	opts := d.Options
	opts.WrapperName, opts.OwnsRaw = r.Name, true
	opts.Server, _ = setup.Server(servers[i], d.Known)
	dr, err := typ.Decode(r.Raw, opts)
	if err == nil {
		if _, _, decoded, _ := d.Resolve(r.TypeURL, dr.Name); decoded != key {
			err = fmt.Errorf("the bytes are of resource %q", dr.Name)
		}
	}
	if err != nil {
		return a, name, nil, err
	}
	return a, Name{r.TypeURL, key}, &Stored{Value: dr.Resource, Raw: r.Raw, Version: r.Version, Server: &servers[i],
		Received: r.Received, Expires: r.Expires}, nil
}
