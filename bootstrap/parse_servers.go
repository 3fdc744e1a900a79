package bootstrap

import (
	"encoding/json"
	"fmt"

	"github.com/xdsengine/xdsengine/registry"
)

// servers parses an "xds_servers" array. At the top level it must not be
// empty; in an authority an empty list means the top-level one.
func (p *parser) servers(path string, raw json.RawMessage, required bool) []ServerConfig {
	list, ok := p.array(path, raw)
	if !ok {
		return nil
	}
	if len(list) == 0 && required {
		p.fail(path, "must not be empty")
		return nil
	}
	var out []ServerConfig
	for i, v := range list {
		if s, ok := p.server(jsonIndex(path, i), v); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) server(path string, raw json.RawMessage) (ServerConfig, bool) {
	obj, ok := p.object(path, raw)
	if !ok {
		return ServerConfig{}, false
	}
	before := len(p.errs)
	var s ServerConfig
	uriPath := path + ".server_uri"
	if v, ok := jsonField(obj, "server_uri"); !ok {
		p.fail(uriPath, "must be a non-empty string")
	} else if s.URI, ok = p.str(uriPath, v); ok && s.URI == "" {
		p.fail(uriPath, "must be a non-empty string")
	}
	s.ChannelCreds = p.channelCreds(path+".channel_creds", obj)
	if v, ok := jsonField(obj, "call_creds"); ok {
		s.CallCreds = p.callCreds(path+".call_creds", v)
	}
	if v, ok := jsonField(obj, "server_features"); ok {
		s.ServerFeatures = p.stringList(path+".server_features", v)
	}
	return s, len(p.errs) == before
}

// channelCreds parses a server's "channel_creds": every entry must be
// well formed, at least one must have a supported type, and the config of
// the first such entry, the one gRPC uses, must be valid for its type.
func (p *parser) channelCreds(path string, server map[string]json.RawMessage) []ChannelCreds {
	v, ok := jsonField(server, "channel_creds")
	if !ok {
		p.fail(path, "is required")
		return nil
	}
	list, ok := p.array(path, v)
	if !ok {
		return nil
	}
	if len(list) == 0 {
		p.fail(path, "must not be empty")
		return nil
	}
	before := len(p.errs)
	var out []ChannelCreds
	for i, raw := range list {
		if typ, config, ok := p.credsEntry(jsonIndex(path, i), raw); ok {
			out = append(out, ChannelCreds{Type: typ, Config: config})
		}
	}
	// A list with broken entries already failed; whether fixing them
	// would leave a supported type is unknown, so say nothing more.
	if len(p.errs) > before {
		return out
	}
	i, ok := p.creds.selectChannel(out)
	if !ok {
		p.fail(path, "%s", p.creds.noChannelProblem(out))
		return out
	}
	if validate := p.creds.channel[out[i].Type].Validate; validate != nil {
		p.credsConfig(jsonIndex(path, i)+".config", validate(out[i].Config))
	}
	return out
}

// callCreds parses a server's "call_creds" (gRFC A97): optional, may be
// empty; every entry must be well formed, and those of a supported type
// must have a valid config. Unsupported types are kept and ignored.
func (p *parser) callCreds(path string, raw json.RawMessage) []CallCreds {
	list, ok := p.array(path, raw)
	if !ok {
		return nil
	}
	var out []CallCreds
	for i, raw := range list {
		entryPath := jsonIndex(path, i)
		typ, config, ok := p.credsEntry(entryPath, raw)
		if !ok {
			continue
		}
		if t, ok := p.creds.call[typ]; ok && t.Validate != nil {
			p.credsConfig(entryPath+".config", t.Validate(config))
		}
		out = append(out, CallCreds{Type: typ, Config: config})
	}
	return out
}

// credsEntry parses one {"type": ..., "config": {...}} entry of a
// credentials list.
func (p *parser) credsEntry(path string, raw json.RawMessage) (typ string, config json.RawMessage, ok bool) {
	obj, ok := p.object(path, raw)
	if !ok {
		return "", nil, false
	}
	typePath := path + ".type"
	t, ok := jsonField(obj, "type")
	if !ok {
		p.fail(typePath, "is required")
		return "", nil, false
	}
	if typ, ok = p.str(typePath, t); !ok {
		return "", nil, false
	}
	if typ == "" {
		p.fail(typePath, "must be a non-empty string")
		return "", nil, false
	}
	if cfg, ok := jsonField(obj, "config"); ok {
		if k := jsonKind(cfg); k != "object" {
			p.fail(path+".config", "want object, got %s", k)
			return "", nil, false
		}
		config = jsonCompact(cfg)
	}
	return typ, config, true
}

// credsConfig records the problems a credentials type found in a config.
func (p *parser) credsConfig(path string, errs []*registry.FieldError) {
	for _, e := range errs {
		p.errs = append(p.errs, fmt.Errorf("bootstrap: %w", registry.FieldWithin(path, e)))
	}
}
