package bootstrap

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/credentials"

	"github.com/xdsengine/xdsengine/registry"
)

// ChannelCredsType is one "channel_creds" type: how its config is checked
// and how it becomes gRPC transport credentials. Each step is in its own
// function so that each runs where it belongs: Validate when a bootstrap
// is parsed, Check when an engine is built (it may open files), Build when
// a connection is made.
type ChannelCredsType struct {
	// Name is the "type" string that selects it, e.g. "tls".
	Name string
	// Insecure says the credentials protect nothing (security protocol
	// "insecure"); call credentials that need transport security are then
	// refused, as gRPC refuses them.
	Insecure bool
	// Validate checks a config without touching the file system. Nil
	// accepts any config.
	Validate func(config json.RawMessage) []*registry.FieldError
	// Check opens what a valid config names (certificate files, ...). Nil
	// means there is nothing to open.
	Check func(config json.RawMessage) []*registry.FieldError
	// Build makes the credentials from a valid config. Required.
	Build func(config json.RawMessage) (BuiltCreds, error)
}

// BuiltCreds are credentials built from the "channel_creds" and
// "call_creds" of a server entry: what a connection to the server uses. A
// [ChannelCredsType] builds them from its config, [Credentials.Build] for
// a whole server entry.
type BuiltCreds struct {
	Transport credentials.TransportCredentials
	// PerRPC are per-call credentials: those that come with the channel
	// type (the OAuth token of google_default), then, from
	// Credentials.Build, those of every known "call_creds" entry, in order.
	PerRPC []credentials.PerRPCCredentials
	// Close stops whatever the credentials started (a file watcher); call
	// it when the connection is closed. A type's Build may leave it nil;
	// Credentials.Build never does.
	Close func()
}

// CallCredsType is one "call_creds" type (gRFC A97), in the same three
// steps as [ChannelCredsType].
type CallCredsType struct {
	Name     string
	Validate func(config json.RawMessage) []*registry.FieldError
	Check    func(config json.RawMessage) []*registry.FieldError
	// Build is required.
	Build func(config json.RawMessage) (credentials.PerRPCCredentials, error)
}

// fieldErrorf returns the problem of a config field, found through the
// error the format makes (which may wrap another with %w).
func fieldErrorf(field, format string, args ...any) *registry.FieldError {
	return &registry.FieldError{Field: field, Err: fmt.Errorf(format, args...)}
}

// Credentials is a set of credential types, by name: which "channel_creds"
// and "call_creds" types a bootstrap may use and what they mean. It is a
// plain value, handed to a [Parser] and to a transport, so that a program
// adds a type of its own without any global registry. The zero value
// means [DefaultCredentials].
type Credentials struct {
	channel map[string]ChannelCredsType
	call    map[string]CallCredsType
}

// DefaultCredentials returns the types gRPC itself accepts in a bootstrap:
//
//   - "insecure": plaintext; its config is ignored.
//   - "google_default": gRPC's Google default credentials
//     (google.golang.org/grpc/credentials/google), as Traffic Director and
//     Cloud Service Mesh bootstraps use: TLS with the system's roots and
//     OAuth tokens from Application Default Credentials. Off Google Cloud
//     without ADC, the channel is TLS without a token; its config is
//     ignored.
//   - "tls" (gRFC A65): TLS, with config "ca_certificate_file" (roots;
//     default the system's), "certificate_file" and "private_key_file"
//     (a client certificate for mTLS, both or neither, in one directory),
//     and "refresh_interval" (a protobuf JSON Duration, default "600s").
//     The files are re-read every refresh_interval by grpc-go's
//     file_watcher provider, and each new connection uses what was read
//     last, so rotated certificates need no restart.
//   - call credentials "jwt_token_file" (gRFC A97), config
//     {"jwt_token_file": path}: "authorization: Bearer <token>" read from
//     the file (google.golang.org/grpc/credentials/jwt), re-read before
//     the token's "exp". gRPC sends such tokens only over a secure
//     channel: grpc-go accepts a bootstrap with call_creds on "insecure"
//     channel_creds but then cannot create the channel, so no request ever
//     reaches the server; [Credentials.Check] and [Credentials.Build]
//     refuse the combination. (grpc-go reads call_creds only with
//     GRPC_EXPERIMENTAL_XDS_BOOTSTRAP_CALL_CREDS=true; these always do.)
func DefaultCredentials() Credentials {
	return Credentials{}.WithChannelCreds(insecureType, googleDefaultType, tlsType).WithCallCreds(jwtTokenFileType)
}

// WithChannelCreds returns a set with c's types and the given ones; a
// given type replaces one of c's of the same name. c is unchanged.
func (c Credentials) WithChannelCreds(types ...ChannelCredsType) Credentials {
	n := Credentials{channel: maps.Clone(c.channel), call: maps.Clone(c.call)}
	if n.channel == nil {
		n.channel = map[string]ChannelCredsType{}
	}
	for _, t := range types {
		n.channel[t.Name] = t
	}
	return n
}

// WithCallCreds returns a set with c's types and the given ones; a given
// type replaces one of c's of the same name. c is unchanged.
func (c Credentials) WithCallCreds(types ...CallCredsType) Credentials {
	n := Credentials{channel: maps.Clone(c.channel), call: maps.Clone(c.call)}
	if n.call == nil {
		n.call = map[string]CallCredsType{}
	}
	for _, t := range types {
		n.call[t.Name] = t
	}
	return n
}

func (c Credentials) orDefault() Credentials {
	if c.channel == nil && c.call == nil {
		return DefaultCredentials()
	}
	return c
}

// ChannelCredsTypes returns the names of the channel credential types,
// sorted.
func (c Credentials) ChannelCredsTypes() []string {
	return slices.Sorted(maps.Keys(c.orDefault().channel))
}

// CallCredsTypes returns the names of the call credential types, sorted.
func (c Credentials) CallCredsTypes() []string {
	return slices.Sorted(maps.Keys(c.orDefault().call))
}

// selectChannel returns the index of the entry a connection uses: the
// first whose type is known, as gRPC chooses (gRFC A27).
func (c Credentials) selectChannel(list []ChannelCreds) (int, bool) {
	for i, cc := range list {
		if _, ok := c.channel[cc.Type]; ok {
			return i, true
		}
	}
	return 0, false
}

// noChannelProblem says that none of the types named is known.
func (c Credentials) noChannelProblem(list []ChannelCreds) string {
	have := make([]string, len(list))
	for i, cc := range list {
		have[i] = cc.Type
	}
	return fmt.Sprintf("no supported type: want one of %s; got %s", quoteAll(slices.Sorted(maps.Keys(c.channel))), quoteAll(have))
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// Check reports everything that would stop a connection to s: a channel
// credentials list with no known type, an invalid config, call
// credentials that need a secure channel on an insecure one, and a file a
// config names that cannot be read or does not hold what it should. The
// error joins one error per problem, each starting with its path inside
// the server entry, as in
//
//	channel_creds[0].config.ca_certificate_file: open /etc/xds/ca.pem: no such file or directory
func (c Credentials) Check(s ServerConfig) error {
	return errors.Join(c.orDefault().problems(s, true)...)
}

func (c Credentials) problems(s ServerConfig, files bool) []error {
	var errs []error
	i, ok := c.selectChannel(s.ChannelCreds)
	if !ok {
		return []error{fmt.Errorf("channel_creds: %s", c.noChannelProblem(s.ChannelCreds))}
	}
	sel := s.ChannelCreds[i]
	ct := c.channel[sel.Type]
	errs = appendConfigErrors(errs, fmt.Sprintf("channel_creds[%d].config", i), ct.Validate, ct.Check, sel.Config, files)
	for j, cc := range s.CallCreds {
		kt, ok := c.call[cc.Type]
		if !ok {
			continue // gRPC ignores call credentials it does not know (A97)
		}
		path := fmt.Sprintf("call_creds[%d]", j)
		if kt.Validate != nil {
			if fe := kt.Validate(cc.Config); len(fe) > 0 {
				errs = appendFieldErrors(errs, path+".config", fe)
				continue
			}
		}
		if ct.Insecure {
			// Built only to ask the credentials themselves; call
			// credentials are cheap to build and start nothing.
			pc, err := kt.Build(cc.Config)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
				continue
			}
			if pc.RequireTransportSecurity() {
				errs = append(errs, fmt.Errorf("%s: %q call credentials need a secure channel, but channel_creds[%d] is %q", path, cc.Type, i, sel.Type))
			}
		}
		if files && kt.Check != nil {
			errs = appendFieldErrors(errs, path+".config", kt.Check(cc.Config))
		}
	}
	return errs
}

func appendConfigErrors(errs []error, path string, validate, check func(json.RawMessage) []*registry.FieldError, config json.RawMessage, files bool) []error {
	var fe []*registry.FieldError
	if validate != nil {
		fe = validate(config)
	}
	if len(fe) == 0 && files && check != nil {
		fe = check(config)
	}
	return appendFieldErrors(errs, path, fe)
}

func appendFieldErrors(errs []error, path string, fe []*registry.FieldError) []error {
	for _, e := range fe {
		errs = append(errs, registry.FieldWithin(path, e))
	}
	return errs
}

// Build makes the credentials of a connection to s. Call credentials go
// on only when the channel credentials are secure: gRPC's own dial refuses
// the combination, and Check names the offending entry.
func (c Credentials) Build(s ServerConfig) (BuiltCreds, error) {
	c = c.orDefault()
	if errs := c.problems(s, false); len(errs) > 0 {
		return BuiltCreds{}, errors.Join(errs...)
	}
	i, _ := c.selectChannel(s.ChannelCreds)
	sel := s.ChannelCreds[i]
	ch, err := c.channel[sel.Type].Build(sel.Config)
	if err != nil {
		return BuiltCreds{}, fmt.Errorf("channel_creds[%d]: %w", i, err)
	}
	out := BuiltCreds{Transport: ch.Transport, PerRPC: slices.Clone(ch.PerRPC), Close: func() {}}
	if ch.Close != nil {
		out.Close = ch.Close
	}
	for j, cc := range s.CallCreds {
		kt, ok := c.call[cc.Type]
		if !ok {
			continue
		}
		pc, err := kt.Build(cc.Config)
		if err != nil {
			out.Close()
			return BuiltCreds{}, fmt.Errorf("call_creds[%d]: %w", j, err)
		}
		out.PerRPC = append(out.PerRPC, pc)
	}
	return out, nil
}

// configFields decodes a credentials config object into its fields, for a
// type's Validate; an absent config is empty.
func configFields(config json.RawMessage) (map[string]json.RawMessage, []*registry.FieldError) {
	if len(config) == 0 || jsonKind(config) == "null" {
		return nil, nil
	}
	if k := jsonKind(config); k != "object" {
		return nil, []*registry.FieldError{fieldErrorf("", "want object, got %s", k)}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(config, &m); err != nil {
		return nil, []*registry.FieldError{{Err: err}}
	}
	return m, nil
}

// stringField reads an optional string field of a config, adding a
// field error to errs if it is not a string.
func stringField(fields map[string]json.RawMessage, name string, errs *[]*registry.FieldError) string {
	v, ok := jsonField(fields, name)
	if !ok {
		return ""
	}
	if k := jsonKind(v); k != "string" {
		*errs = append(*errs, fieldErrorf(name, "want string, got %s", k))
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		*errs = append(*errs, &registry.FieldError{Field: name, Err: err})
	}
	return s
}
