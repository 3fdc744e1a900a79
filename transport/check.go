package transport

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// ServerChecker is an optional interface of a [Builder]: a
// builder that can tell, without connecting, that every connection to a
// server would fail (a credential file that cannot be read, a certificate
// that does not match its key) implements it, and engine.New then fails instead
// of an engine whose streams all end in UNAVAILABLE. The default gRPC
// transport implements it.
//
// engine.New calls CheckServer for every entry of the bootstrap's top-level and
// authority server lists. An error should start with the path of the field
// inside the entry, as in
//
//	channel_creds[0].config.ca_certificate_file: open /etc/xds/ca.pem: no such file or directory
//
// engine.New reports it after the entry's own path and a dot:
//
//	engine: bootstrap xds_servers[0].channel_creds[0].config.ca_certificate_file: open ...
//
// A joined error (errors.Join) is reported one line per error, each so
// prefixed.
type ServerChecker interface {
	CheckServer(s bootstrap.ServerConfig) error
}

// CheckServers runs b's ServerChecker, if it has one, over every server
// of bs, and reports all problems at once, each after the path of its
// server's entry in the bootstrap.
func CheckServers(b Builder, bs *bootstrap.Bootstrap) error {
	c, ok := b.(ServerChecker)
	if !ok {
		return nil
	}
	var errs []error
	check := func(path string, s bootstrap.ServerConfig) {
		err := c.CheckServer(s)
		if err == nil {
			return
		}
		list := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			list = j.Unwrap()
		}
		for _, e := range list {
			errs = append(errs, fmt.Errorf("engine: bootstrap %s.%w", path, e))
		}
	}
	for i, s := range bs.Servers {
		check(fmt.Sprintf("xds_servers[%d]", i), s)
	}
	for _, name := range slices.Sorted(maps.Keys(bs.Authorities)) {
		for i, s := range bs.Authorities[name].Servers {
			check(fmt.Sprintf("authorities[%q].xds_servers[%d]", name, i), s)
		}
	}
	return errors.Join(errs...)
}
