package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
)

// Parser parses bootstraps with a set of credential types. The zero value
// uses [DefaultCredentials]; a Parser is a plain value, so a program adds a
// credential type of its own without touching any global state:
//
//	p := bootstrap.Parser{Credentials: bootstrap.DefaultCredentials().WithChannelCreds(myType)}
//	bs, err := p.FromEnv()
type Parser struct {
	// Credentials are the credential types whose configs are validated,
	// and at least one of which each server's "channel_creds" must list.
	Credentials Credentials
}

// Parse parses a bootstrap with the default credential types: see
// [Parser.Parse].
func Parse(data []byte) (*Bootstrap, error) { return Parser{}.Parse(data) }

// Parse parses gRPC's xDS bootstrap JSON (the same file gRPC
// uses; gRFC A27, A47, A65, A71, A95, A97).
//
// The input must be a JSON object with a non-empty "xds_servers" array.
// Each server needs a non-empty "server_uri" and a non-empty
// "channel_creds" array whose entries each have a "type"; at least one type
// must be one the parser's [Credentials] know: by default
// "google_default", "insecure" or "tls" (see [DefaultCredentials] for
// their meaning). "call_creds" is optional; its entries need a "type"
// too, and those of a known type (by default "jwt_token_file") are
// validated while the others are ignored, as gRPC does. All entries are
// kept in order. "node", "authorities", the two listener resource name
// templates and "certificate_providers" are optional. An authority's
// "client_listener_resource_name_template", if set, must start with
// "xdstp://<authority name>/".
//
// Credential configs are checked as far as that is possible without
// touching the file system, with gRPC's rules: for the channel credentials
// gRPC would use (the first supported entry) and for every supported call
// credentials entry. A "tls" config's file names must be strings,
// "certificate_file" and "private_key_file" come together and from one
// directory, and "refresh_interval" must be a protobuf JSON Duration such
// as "600s"; a "jwt_token_file" config needs "jwt_token_file". A
// certificate provider whose "plugin_name" is "file_watcher" must have a
// config of the same form naming at least one file. Whether the files
// exist and hold what they should is checked by [Credentials.Check], which
// an engine runs when it is built.
//
// As A27 requires, unknown fields are ignored at every level, and so is
// everything in "node" besides id, cluster, locality and metadata. A field
// whose value is null counts as absent, as with encoding/json. Channel and
// call credential and certificate provider configs are kept as JSON with
// insignificant whitespace removed, so that equal configs compare equal.
//
// The error reports every problem found, not only the first, one per
// line, each naming the JSON path, e.g.
//
//	bootstrap: xds_servers[0].server_uri: must be a non-empty string
//	bootstrap: xds_servers[0].channel_creds[0].config.refresh_interval: want a protobuf JSON Duration such as "600s", got 600: ...
//	bootstrap: node.locality.zone: want string, got number
func (p Parser) Parse(data []byte) (*Bootstrap, error) {
	var raw json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("bootstrap: invalid JSON at byte offset %d: %w", se.Offset, err)
		}
		return nil, fmt.Errorf("bootstrap: invalid JSON: %w", err)
	}
	if k := jsonKind(raw); k != "object" {
		return nil, fmt.Errorf("bootstrap: top level: want object, got %s", k)
	}
	ps := parser{creds: p.Credentials.orDefault()}
	b := ps.parse(raw)
	if len(ps.errs) > 0 {
		return nil, errors.Join(ps.errs...)
	}
	return b, nil
}

// parser walks the decoded JSON, collecting one error per
// problem so that a user fixes a bootstrap in one round.
type parser struct {
	errs  []error
	creds Credentials // the types whose configs are validated
}

func (p *parser) fail(path, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("bootstrap: %s: %s", path, fmt.Sprintf(format, args...)))
}

func (p *parser) parse(raw json.RawMessage) *Bootstrap {
	root, _ := p.object("top level", raw)
	b := &Bootstrap{}
	if v, ok := jsonField(root, "xds_servers"); ok {
		b.Servers = p.servers("xds_servers", v, true)
	} else {
		p.fail("xds_servers", "is required")
	}
	if v, ok := jsonField(root, "node"); ok {
		b.Node = p.node("node", v)
	}
	if v, ok := jsonField(root, "authorities"); ok {
		b.Authorities = p.authorities("authorities", v)
	}
	if v, ok := jsonField(root, "client_default_listener_resource_name_template"); ok {
		b.ClientDefaultListenerResourceNameTemplate, _ = p.str("client_default_listener_resource_name_template", v)
	}
	if v, ok := jsonField(root, "server_listener_resource_name_template"); ok {
		b.ServerListenerResourceNameTemplate, _ = p.str("server_listener_resource_name_template", v)
	}
	if v, ok := jsonField(root, "certificate_providers"); ok {
		b.CertificateProviders = p.certificateProviders("certificate_providers", v)
	}
	return b
}

func (p *parser) node(path string, raw json.RawMessage) Node {
	var n Node
	obj, ok := p.object(path, raw)
	if !ok {
		return n
	}
	if v, ok := jsonField(obj, "id"); ok {
		n.ID, _ = p.str(path+".id", v)
	}
	if v, ok := jsonField(obj, "cluster"); ok {
		n.Cluster, _ = p.str(path+".cluster", v)
	}
	if v, ok := jsonField(obj, "locality"); ok {
		lpath := path + ".locality"
		if loc, ok := p.object(lpath, v); ok {
			if v, ok := jsonField(loc, "region"); ok {
				n.Locality.Region, _ = p.str(lpath+".region", v)
			}
			if v, ok := jsonField(loc, "zone"); ok {
				n.Locality.Zone, _ = p.str(lpath+".zone", v)
			}
			if v, ok := jsonField(loc, "sub_zone"); ok {
				n.Locality.SubZone, _ = p.str(lpath+".sub_zone", v)
			}
		}
	}
	if v, ok := jsonField(obj, "metadata"); ok {
		n.Metadata = p.metadata(path+".metadata", v)
	}
	return n
}

// metadata converts a JSON object to a Struct the way protojson would,
// numbers becoming doubles; duplicate keys keep the last value, as
// everywhere else in the bootstrap.
func (p *parser) metadata(path string, raw json.RawMessage) *structpb.Struct {
	if k := jsonKind(raw); k != "object" {
		p.fail(path, "want object, got %s", k)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		p.fail(path, "%v", err)
		return nil
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		p.fail(path, "%v", err)
		return nil
	}
	return s
}

func (p *parser) authorities(path string, raw json.RawMessage) map[string]Authority {
	obj, ok := p.object(path, raw)
	if !ok {
		return nil
	}
	out := make(map[string]Authority, len(obj))
	// Sorted, so that errors come out in a stable order.
	for _, name := range jsonSortedKeys(obj) {
		apath := jsonKey(path, name)
		a, ok := p.object(apath, obj[name])
		if !ok {
			continue
		}
		var auth Authority
		if v, ok := jsonField(a, "xds_servers"); ok {
			auth.Servers = p.servers(apath+".xds_servers", v, false)
		}
		if v, ok := jsonField(a, "client_listener_resource_name_template"); ok {
			tpath := apath + ".client_listener_resource_name_template"
			if t, ok := p.str(tpath, v); ok && t != "" {
				if prefix := "xdstp://" + name + "/"; !strings.HasPrefix(t, prefix) && !strings.HasPrefix(t, escapedAuthorityPrefix(name)) {
					p.fail(tpath, "must start with %q", prefix)
				}
				auth.ClientListenerResourceNameTemplate = t
			}
		}
		if v, ok := jsonField(a, "fallback_on_reachability_only"); ok {
			auth.FallbackOnReachabilityOnly, _ = p.boolean(apath+".fallback_on_reachability_only", v)
		}
		out[name] = auth
	}
	return out
}

// escapedAuthorityPrefix is the template prefix grpc-go checks, with
// the authority name percent-encoded by url.PathEscape ("a b" as
// "xdstp://a%20b/"). gRPC C-core and Java compare against the raw name;
// both spellings name the same authority, so either is accepted.
func escapedAuthorityPrefix(name string) string {
	return "xdstp://" + url.PathEscape(name) + "/"
}

// fileWatcherPlugin is the certificate provider plugin that watches PEM
// files (gRFC A29).
const fileWatcherPlugin = "file_watcher"

func (p *parser) certificateProviders(path string, raw json.RawMessage) map[string]CertificateProvider {
	obj, ok := p.object(path, raw)
	if !ok {
		return nil
	}
	out := make(map[string]CertificateProvider, len(obj))
	for _, name := range jsonSortedKeys(obj) {
		cpath := jsonKey(path, name)
		c, ok := p.object(cpath, obj[name])
		if !ok {
			continue
		}
		var cp CertificateProvider
		if v, ok := jsonField(c, "plugin_name"); ok {
			cp.PluginName, _ = p.str(cpath+".plugin_name", v)
		}
		if v, ok := jsonField(c, "config"); ok {
			cp.Config = jsonCompact(v)
		}
		// gRPC rejects a bootstrap whose provider of a plugin it knows has
		// a bad config, and every gRPC knows file_watcher (gRFC A29).
		if cp.PluginName == fileWatcherPlugin {
			_, errs := parseTLSFiles(cp.Config, true)
			p.credsConfig(cpath+".config", errs)
		}
		out[name] = cp
	}
	return out
}

// stringList parses an array of strings.
func (p *parser) stringList(path string, raw json.RawMessage) []string {
	list, ok := p.array(path, raw)
	if !ok {
		return nil
	}
	var out []string
	for i, v := range list {
		if s, ok := p.str(jsonIndex(path, i), v); ok {
			out = append(out, s)
		}
	}
	return out
}

// The typed accessors below check the JSON kind before decoding, so a
// wrong type is reported as "want X, got Y" at the value's own path
// rather than as encoding/json's Go-flavoured message.

func (p *parser) object(path string, raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if k := jsonKind(raw); k != "object" {
		p.fail(path, "want object, got %s", k)
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		p.fail(path, "%v", err)
		return nil, false
	}
	return m, true
}

func (p *parser) array(path string, raw json.RawMessage) ([]json.RawMessage, bool) {
	if k := jsonKind(raw); k != "array" {
		p.fail(path, "want array, got %s", k)
		return nil, false
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		p.fail(path, "%v", err)
		return nil, false
	}
	return a, true
}

func (p *parser) str(path string, raw json.RawMessage) (string, bool) {
	if k := jsonKind(raw); k != "string" {
		p.fail(path, "want string, got %s", k)
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		p.fail(path, "%v", err)
		return "", false
	}
	return s, true
}

func (p *parser) boolean(path string, raw json.RawMessage) (bool, bool) {
	if k := jsonKind(raw); k != "boolean" {
		p.fail(path, "want boolean, got %s", k)
		return false, false
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		p.fail(path, "%v", err)
		return false, false
	}
	return b, true
}
