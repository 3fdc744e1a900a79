package engine

import "testing"

const cdsURL = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

func testAuthorities() (*authorities, *authority, *authority) {
	old := &authority{name: "", oldStyle: true, resources: map[string]map[string]*entry{cdsURL: {"c1": {name: "c1"}}}}
	a := &authority{name: "a", resources: map[string]map[string]*entry{cdsURL: {
		"xdstp://a/envoy.config.cluster.v3.Cluster/c1": {name: "xdstp://a/envoy.config.cluster.v3.Cluster/c1"},
		"xdstp://a/envoy.config.cluster.v3.Cluster/c2": {name: "xdstp://a/envoy.config.cluster.v3.Cluster/c2"},
	}}}
	return &authorities{oldStyle: old, byName: map[string]*authority{"a": a}}, old, a
}

// TestResolveName: a name's authority and cache key (gRFC A47): an
// old-style name is its own key, an xdstp:// one its canonical form; a
// name that does not parse, is of another type, is not UTF-8 or names an
// authority not in the bootstrap has none, and says why.
func TestResolveName(t *testing.T) {
	as, old, a := testAuthorities()
	for _, tc := range []struct {
		name, in string
		auth     *authority
		key      string
		unknown  bool // an error with unknownAuthority
		invalid  bool // an error without
		errName  string
	}{
		{name: "old-style", in: "c1", auth: old, key: "c1"},
		{name: "old-style, xdstp-like but not xdstp", in: "xdstpc1", auth: old, key: "xdstpc1"},
		{name: "plain canonical", in: "xdstp://a/envoy.config.cluster.v3.Cluster/c1", auth: a,
			key: "xdstp://a/envoy.config.cluster.v3.Cluster/c1"},
		{name: "canonicalized: parameters sorted", in: "xdstp://a/envoy.config.cluster.v3.Cluster/c1?b=2&a=1", auth: a,
			key: "xdstp://a/envoy.config.cluster.v3.Cluster/c1?a=1&b=2"},
		{name: "another type's name", in: "xdstp://a/envoy.config.listener.v3.Listener/l", invalid: true,
			errName: "xdstp://a/envoy.config.listener.v3.Listener/l"},
		{name: "no id", in: "xdstp://a/envoy.config.cluster.v3.Cluster", invalid: true,
			errName: "xdstp://a/envoy.config.cluster.v3.Cluster"},
		{name: "not UTF-8", in: "c\xff", invalid: true, errName: "c\uFFFD"},
		{name: "unknown authority", in: "xdstp://b/envoy.config.cluster.v3.Cluster/c1", unknown: true,
			errName: "xdstp://b/envoy.config.cluster.v3.Cluster/c1"},
	} {
		got, key, err := as.resolve(cdsURL, tc.in)
		if k, kerr := as.key(cdsURL, tc.in); k != key || (err == nil) != (kerr == nil) || err != nil && kerr.Error() != err.Err.Error() {
			t.Errorf("%s: key(%q) = %q, %v; want resolve's key %q and cause %v", tc.name, tc.in, k, kerr, key, err)
		}
		switch {
		case tc.unknown || tc.invalid:
			if err == nil || err.UnknownAuthority != tc.unknown || err.Name != tc.errName || err.Err == nil || got != nil || key != "" {
				t.Errorf("%s: resolve(%q) = %v, %q, %+v; want an error (unknown authority: %v) naming %q",
					tc.name, tc.in, got, key, err, tc.unknown, tc.errName)
			}
		case err != nil || got != tc.auth || key != tc.key:
			t.Errorf("%s: resolve(%q) = %v, %q, %v; want %s, %q", tc.name, tc.in, got, key, err, tc.auth.name, tc.key)
		}
	}
}

// TestKeyLookup: each key's authority and entry; keys of one authority
// in a row reuse its map.
func TestKeyLookup(t *testing.T) {
	as, old, a := testAuthorities()
	k := keyLookup{as: as, typeURL: cdsURL}
	for _, step := range []struct {
		key, entry string // "" for none
		auth       *authority
	}{
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c1", "xdstp://a/envoy.config.cluster.v3.Cluster/c1", a},
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c2", "xdstp://a/envoy.config.cluster.v3.Cluster/c2", a},
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c3", "", a},
		{"c1", "c1", old},
		{"c2", "", old},
		{"xdstp://b/envoy.config.cluster.v3.Cluster/c1", "", nil}, // unknown authority
		{"xdstp://b/envoy.config.cluster.v3.Cluster/c2", "", nil},
		{"xdstp://a", "", nil}, // no '/': no authority
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c1", "xdstp://a/envoy.config.cluster.v3.Cluster/c1", a},
	} {
		got, en := k.entry(step.key)
		name := ""
		if en != nil {
			name = en.name
		}
		if got != step.auth || name != step.entry {
			t.Errorf("entry(%q) = %v, %q; want %v, %q", step.key, got, name, step.auth, step.entry)
		}
	}
}
