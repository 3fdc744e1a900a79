package resolve

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const cds = "type.googleapis.com/envoy.config.cluster.v3.Cluster"

// auth is an authority whose Entries calls are counted.
type auth struct {
	name    string
	entries map[string]map[string]string // type URL → key → entry
	reads   int
}

func (a *auth) Entries(typeURL string) map[string]string {
	a.reads++
	return a.entries[typeURL]
}

func authorities() (*Authorities[*auth], *auth, *auth) {
	old := &auth{name: "#old", entries: map[string]map[string]string{cds: {"c1": "old c1"}}}
	a := &auth{name: "a", entries: map[string]map[string]string{cds: {
		"xdstp://a/envoy.config.cluster.v3.Cluster/c1": "a c1",
		"xdstp://a/envoy.config.cluster.v3.Cluster/c2": "a c2",
	}}}
	return &Authorities[*auth]{OldStyle: old, ByName: map[string]*auth{"a": a}}, old, a
}

func TestResolve(t *testing.T) {
	as, old, a := authorities()
	for _, tc := range []struct {
		name, in string
		auth     *auth
		key      string
		unknown  bool // an Error with UnknownAuthority
		invalid  bool // an Error without
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
		got, key, err := as.Resolve(cds, tc.in)
		if k, kerr := as.Key(cds, tc.in); k != key || (err == nil) != (kerr == nil) || err != nil && kerr.Error() != err.Err.Error() {
			t.Errorf("%s: Key(%q) = %q, %v; want Resolve's key %q and cause %v", tc.name, tc.in, k, kerr, key, err)
		}
		switch {
		case tc.unknown || tc.invalid:
			if err == nil || err.UnknownAuthority != tc.unknown || err.Name != tc.errName || err.Err == nil || got != nil || key != "" {
				t.Errorf("%s: Resolve(%q) = %v, %q, %+v; want an error (unknown authority: %v) naming %q",
					tc.name, tc.in, got, key, err, tc.unknown, tc.errName)
			}
		case err != nil || got != tc.auth || key != tc.key:
			t.Errorf("%s: Resolve(%q) = %v, %q, %v; want %s, %q", tc.name, tc.in, got, key, err, tc.auth.name, tc.key)
		}
	}
}

func TestKeys(t *testing.T) {
	as, old, a := authorities()
	k := NewKeys[*auth, string](as, cds)
	for _, step := range []struct {
		key, entry string
		auth       *auth
		oldReads   int // Entries calls so far
		aReads     int
	}{
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c1", "a c1", a, 0, 1},
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c2", "a c2", a, 0, 1}, // same authority: its map again
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c3", "", a, 0, 1},
		{"c1", "old c1", old, 1, 1},
		{"c2", "", old, 1, 1},
		{"xdstp://b/envoy.config.cluster.v3.Cluster/c1", "", nil, 1, 1}, // unknown authority
		{"xdstp://b/envoy.config.cluster.v3.Cluster/c2", "", nil, 1, 1},
		{"xdstp://a", "", nil, 1, 1}, // no '/': no authority
		{"xdstp://a/envoy.config.cluster.v3.Cluster/c1", "a c1", a, 1, 2},
	} {
		got, en := k.Entry(step.key)
		if got != step.auth || en != step.entry || old.reads != step.oldReads || a.reads != step.aReads {
			t.Errorf("Entry(%q) = %v, %q with %d, %d reads; want %v, %q with %d, %d",
				step.key, got, en, old.reads, a.reads, step.auth, step.entry, step.oldReads, step.aReads)
		}
	}
}
