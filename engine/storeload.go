package engine

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine/storage"
	"github.com/xdsengine/xdsengine/registry"
)

// Reading the last-known-good store back: what Load returns is decoded
// and validated again, as if its servers had just sent it, under the
// registry and bootstrap of the day.

// storedResource is a resource the store gave back, decoded and valid:
// what the engine serves while no server of its authority answers.
type storedResource struct {
	value             registry.Resource
	raw               []byte
	version           string
	server            *bootstrap.ServerConfig // the authority's entry of the server that sent it
	received, expires time.Time               // expires is zero when the server sent no ttl
}

// expired reports whether s is past serving at now (see expiredAt).
func (s *storedResource) expired(now time.Time, maxAge time.Duration) bool {
	return expiredAt(s.received, s.expires, now, maxAge)
}

// expiredAt reports whether a resource received at received, with a ttl
// running out at expires (zero: none), is past serving at now: older than
// maxAge, or its ttl run out. The store keeps no such resource.
func expiredAt(received, expires, now time.Time, maxAge time.Duration) bool {
	return now.Sub(received) > maxAge || !expires.IsZero() && now.After(expires)
}

// storedName is a stored resource's type and cache key within its
// authority.
type storedName struct{ typeURL, key string }

// loadStore reads and decodes the store, dropping what does not validate
// under the registry of the day, or is from a server the authority no
// longer lists; what is lost is counted and logged. What is past serving
// (older than StoreMaxAge, or past its ttl) is not decoded: expired
// lists it, for the store to forget.
func (e *Engine) loadStore(lg *storeSide) (loaded map[*authority]map[storedName]*storedResource, expired []storage.Resource) {
	got, err := lg.store.Load(lg.digest)
	if err != nil {
		e.metrics.add(countStoreFailures, 1, "", "")
		e.log.Warn("xDS last-known-good store: load failed; starting without it", "error", err)
		return nil, nil
	}
	e.metrics.add(countLoads, 1, "", "")
	if got.Corrupt > 0 {
		e.metrics.add(countDropped, got.Corrupt, "", "")
		e.log.Warn("xDS last-known-good store: corrupt resources dropped", "count", got.Corrupt)
	}
	now := e.clock.Now()
	loaded = map[*authority]map[storedName]*storedResource{}
	for _, r := range got.Resources {
		if expiredAt(r.Received, r.Expires, now, lg.maxAge) {
			expired = append(expired, r)
			continue
		}
		a, name, s, err := e.decodeStored(r)
		if err != nil {
			e.metrics.add(countDropped, 1, r.Server, r.TypeURL)
			e.log.Warn("xDS last-known-good store: resource dropped", "type", r.TypeURL, "name", r.Name, "error", err)
			continue
		}
		if loaded[a] == nil {
			loaded[a] = map[storedName]*storedResource{}
		}
		loaded[a][name] = s
	}
	return loaded, expired
}

// decodeStored decodes one stored resource as if its server had just
// sent it; an error says why it is not served: its type is gone,
// switched off or not stored, its name no longer resolves, its server is
// no longer its authority's, its bytes do not validate, or they are of
// another resource.
func (e *Engine) decodeStored(r storage.Resource) (*authority, storedName, *storedResource, error) {
	typ := e.types[r.TypeURL]
	if typ == nil || typ.NotStored {
		return nil, storedName{}, nil, errors.New("type is not registered, switched off or not stored")
	}
	a, key, rerr := e.resolveName(r.TypeURL, r.Name)
	if rerr != nil {
		return nil, storedName{}, nil, rerr
	}
	i := slices.IndexFunc(a.servers, func(s bootstrap.ServerConfig) bool { return s.URI == r.Server })
	if i < 0 {
		return nil, storedName{}, nil, fmt.Errorf("server %s is not one of its authority's", r.Server)
	}
	opts := registry.DecodeOptions{Switches: e.switches, CertificateProviders: e.certificateProviders, WrapperName: r.Name, OwnsRaw: true}
	opts.Server, _ = serverInfo(a.servers[i], e.known)
	dr, err := typ.Decode(r.Raw, opts)
	if err == nil {
		if _, decoded, rerr := e.resolveName(r.TypeURL, dr.Name); rerr != nil || decoded != key {
			err = fmt.Errorf("the bytes are of resource %q", dr.Name)
		}
	}
	if err != nil {
		return nil, storedName{}, nil, err
	}
	return a, storedName{r.TypeURL, key}, &storedResource{value: dr.Resource, raw: r.Raw, version: r.Version,
		server: &a.servers[i], received: r.Received, expires: r.Expires}, nil
}

// storeDigest is what makes a store's configuration valid for a process: its
// node (id, cluster, locality, metadata) and its bootstrap's servers and
// authorities, as deterministic bytes hashed. A store written under
// another digest is not served.
func storeDigest(node *corepb.Node, b *bootstrap.Bootstrap) []byte {
	type server struct {
		URI              string
		Creds, CallCreds []string
		Features         []string
		Delta            bool
	}
	servers := func(ss []bootstrap.ServerConfig) []server {
		var out []server
		for _, s := range ss {
			x := server{URI: s.URI, Features: s.ServerFeatures, Delta: s.Delta}
			for _, c := range s.ChannelCreds {
				x.Creds = append(x.Creds, c.Type+" "+string(c.Config))
			}
			for _, c := range s.CallCreds {
				x.CallCreds = append(x.CallCreds, c.Type+" "+string(c.Config))
			}
			out = append(out, x)
		}
		return out
	}
	authorities := map[string][]server{}
	for name, a := range b.Authorities {
		authorities[name] = servers(a.Servers)
	}
	meta, _ := proto.MarshalOptions{Deterministic: true}.Marshal(node.GetMetadata())
	loc, _ := proto.MarshalOptions{Deterministic: true}.Marshal(node.GetLocality())
	// encoding/json writes map keys sorted: the same bootstrap, the same bytes.
	j, _ := json.Marshal(struct {
		ID, Cluster        string
		Locality, Metadata []byte
		Servers            []server
		Authorities        map[string][]server
	}{node.GetId(), node.GetCluster(), loc, meta, servers(b.Servers), authorities})
	sum := sha256.Sum256(j)
	return sum[:]
}
