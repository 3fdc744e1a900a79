package xdsname

import (
	"unsafe"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const ldsType = "envoy.config.listener.v3.Listener"

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Name
	}{
		{"old-style", "server.example.com", Name{ID: "server.example.com"}},
		{"old-style empty", "", Name{}},
		{"old-style with slashes and percent", "a/b%zz?x=1", Name{ID: "a/b%zz?x=1"}},
		{"old-style other scheme", "http://a/b/c", Name{ID: "http://a/b/c"}},
		{"old-style uppercase scheme", "XDSTP://a/T/id", Name{ID: "XDSTP://a/T/id"}},
		{
			"basic", "xdstp://a.example/" + ldsType + "/foo",
			Name{Scheme: "xdstp", Authority: "a.example", Type: ldsType, ID: "foo"},
		},
		{
			"empty authority", "xdstp:///" + ldsType + "/foo",
			Name{Scheme: "xdstp", Type: ldsType, ID: "foo"},
		},
		{
			"authority with port and IPv6", "xdstp://[::1]:8080/T/foo",
			Name{Scheme: "xdstp", Authority: "[::1]:8080", Type: "T", ID: "foo"},
		},
		{
			"id with slashes and empty segments", "xdstp://a/T/grpc/client//x/",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "grpc/client//x/"},
		},
		{
			"context params", "xdstp://a/T/foo?b=2&a=1",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "foo", ContextParams: map[string]string{"a": "1", "b": "2"}},
		},
		{
			"duplicate param keeps last", "xdstp://a/T/foo?k=1&k=2",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "foo", ContextParams: map[string]string{"k": "2"}},
		},
		{
			"empty pairs and valueless key", "xdstp://a/T/foo?&k&&=v&",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "foo", ContextParams: map[string]string{"k": "", "": "v"}},
		},
		{
			"empty query", "xdstp://a/T/foo?",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "foo"},
		},
		{
			"fragment dropped", "xdstp://a/T/foo?x=1#alt=xdstp://b/T/foo",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "foo", ContextParams: map[string]string{"x": "1"}},
		},
		{
			"percent-decoding everywhere", "xdstp://f%25%2F%3F%23o/T/b%25:%3F%23%5B%5Dar//baz?%25%26%3D=%26%3D%2B",
			Name{Scheme: "xdstp", Authority: "f%/?#o", Type: "T", ID: "b%:?#[]ar//baz", ContextParams: map[string]string{"%&=": "&=+"}},
		},
		{
			"lowercase hex", "xdstp://a/T/%5b%5d",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "[]"},
		},
		{
			"encoded slash in id is a slash", "xdstp://a/T/x%2Fy",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "x/y"},
		},
		{
			"encoded slash in type splits it (decode, then split, as gRPC does)", "xdstp://a/T%2Fx",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "x"},
		},
		{
			"plus is literal", "xdstp://a/T/a+b?k=a+b",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "a+b", ContextParams: map[string]string{"k": "a+b"}},
		},
		{
			"raw characters that need encoding are accepted", "xdstp://a/T/a b[]?k=v w",
			Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "a b[]", ContextParams: map[string]string{"k": "v w"}},
		},
		{
			"userinfo-looking authority is opaque", "xdstp://u@h:1/T/x",
			Name{Scheme: "xdstp", Authority: "u@h:1", Type: "T", ID: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
			if got.IsXDSTP() != (tt.want.Scheme == Scheme) {
				t.Errorf("IsXDSTP() = %v", got.IsXDSTP())
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"xdstp:", `must start with "xdstp://"`},
		{"xdstp:a/T/id", `must start with "xdstp://"`},
		{"xdstp:/a/T/id", `must start with "xdstp://"`},
		{"xdstp://", "missing resource type"},
		{"xdstp://a", "missing resource type"},
		{"xdstp://a?x=/T/id", "missing resource type"},
		{"xdstp://a/", "missing resource type"},
		{"xdstp://a//id", "missing resource type"},
		{"xdstp://a/T", "missing resource id"},
		{"xdstp://a/T/", "missing resource id"},
		{"xdstp://a/T/?x=1", "missing resource id"},
		{"xdstp://a/T#/id", "missing resource id"},
		{"xdstp://a%zz/T/id", `authority: invalid percent-encoding "%zz"`},
		{"xdstp://a%4/T/id", `authority: invalid percent-encoding "%4"`},
		{"xdstp://a/T/id%", `path: invalid percent-encoding "%"`},
		{"xdstp://a/T/id%g0", `path: invalid percent-encoding "%g0"`},
		{"xdstp://a/T/id?k%=v", `context params: invalid percent-encoding "%"`},
		{"xdstp://a/T/id?k=v%2", `context params: invalid percent-encoding "%2"`},
		{"xdstp://a/T/i\nd", "control character at byte offset 13"},
		{"xdstp://a/T/id?k=\x7f", "control character"},
		{"xdstp://a\x00/T/id", "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %+v, want error containing %q", tt.in, got, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "xdsname: ") {
				t.Errorf("Parse(%q) error = %q, want it to contain %q", tt.in, err, tt.want)
			}
			if _, err := Canonical(tt.in); err == nil {
				t.Errorf("Canonical(%q) succeeded", tt.in)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"old-style unchanged", "Foo Bar/%zz?b=1&a=2", "Foo Bar/%zz?b=1&a=2"},
		{"already canonical", "xdstp://a.example/" + ldsType + "/foo", "xdstp://a.example/" + ldsType + "/foo"},
		{"params sorted", "xdstp://a/T/foo?c=3&a=1&b=2", "xdstp://a/T/foo?a=1&b=2&c=3"},
		{"empty query dropped", "xdstp://a/T/foo?", "xdstp://a/T/foo"},
		{"empty pairs dropped", "xdstp://a/T/foo?&b=&&a", "xdstp://a/T/foo?a=&b="},
		{"duplicate keeps last", "xdstp://a/T/foo?k=1&j=0&k=2", "xdstp://a/T/foo?j=0&k=2"},
		{"fragment dropped", "xdstp://a/T/foo#entry=x", "xdstp://a/T/foo"},
		{"unreserved decoded", "xdstp://%61/%54/%7efoo%2D", "xdstp://a/T/~foo-"},
		{"hex uppercased", "xdstp://a/T/%5b::1%5d:8080", "xdstp://a/T/%5B::1%5D:8080"},
		{"raw space encoded", "xdstp://a/T/a b?k=c d", "xdstp://a/T/a%20b?k=c%20d"},
		{"encoded slash in id decoded", "xdstp://a/T/x%2Fy", "xdstp://a/T/x/y"},
		{"sub-delims kept in path", "xdstp://a/T/%21%24%26%27%28%29%2A%2B%2C%3B%3D%3A%40", "xdstp://a/T/!$&'()*+,;=:@"},
		{"query delimiters encoded", "xdstp://a/T/x?k=%26%3D%2B%3B%23", "xdstp://a/T/x?k=%26%3D%2B%3B%23"},
		{"plus in query encoded", "xdstp://a/T/x?a+b=c+d", "xdstp://a/T/x?a%2Bb=c%2Bd"},
		{"slash and question mark kept in query", "xdstp://a/T/x?k=%2F%3F", "xdstp://a/T/x?k=/?"},
		{"question mark and hash encoded in path", "xdstp://a/T/%3F%23", "xdstp://a/T/%3F%23"},
		{"authority delimiters encoded", "xdstp://f%25%2F%3F%23%40o/T/x", "xdstp://f%25%2F%3F%23%40o/T/x"},
		{"authority IPv6 kept", "xdstp://[::1]:80/T/x", "xdstp://[::1]:80/T/x"},
		{"raw at-sign in authority encoded", "xdstp://u@h/T/x", "xdstp://u%40h/T/x"},
		{"non-ASCII encoded", "xdstp://a/T/é", "xdstp://a/T/%C3%A9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(tt.in)
			if err != nil {
				t.Fatalf("Canonical(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Canonical(%q) = %q, want %q", tt.in, got, tt.want)
			}
			again, err := Canonical(got)
			if err != nil || again != got {
				t.Errorf("Canonical(%q) = %q, %v; canonical form must be a fixed point", got, again, err)
			}
		})
	}
}

// Names that differ only in context param order (TP1 normalization) or in
// how they spell a character must canonicalize to the same string.
func TestCanonicalEquivalence(t *testing.T) {
	groups := [][]string{
		{
			"xdstp://a/T/foo?x=1&y=2&z=3",
			"xdstp://a/T/foo?z=3&y=2&x=1",
			"xdstp://a/T/foo?y=2&x=1&z=3",
			"xdstp://a/T/foo?y=2&x=1&&z=3#frag",
			"xdstp://%61/T/f%6Fo?%79=%32&x=1&z=3",
		},
		{
			"xdstp://a/T/%5B::1%5D:8080",
			"xdstp://a/T/%5b::1%5d:8080",
			"xdstp://a/T/[::1]:8080",
		},
	}
	for _, g := range groups {
		want, err := Canonical(g[0])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range g[1:] {
			if got, err := Canonical(s); err != nil || got != want {
				t.Errorf("Canonical(%q) = %q, %v; want %q", s, got, err, want)
			}
		}
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		in   Name
		want string
	}{
		{"old-style", Name{ID: "a b%"}, "a b%"},
		{"old-style ignores other fields", Name{Authority: "x", Type: "T", ID: "id", ContextParams: map[string]string{"a": "b"}}, "id"},
		{"xdstp", Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "x/y"}, "xdstp://a/T/x/y"},
		{"empty params map", Name{Scheme: "xdstp", Authority: "a", Type: "T", ID: "x", ContextParams: map[string]string{}}, "xdstp://a/T/x"},
		{"params sorted", Name{Scheme: "xdstp", Type: "T", ID: "x", ContextParams: map[string]string{"b": "", "a": "1", "": "e"}}, "xdstp:///T/x?=e&a=1&b="},
		{"slash in type encoded", Name{Scheme: "xdstp", Authority: "a", Type: "T/U", ID: "x"}, "xdstp://a/T%2FU/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.in.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTypeFromURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"type.googleapis.com/envoy.config.listener.v3.Listener", "envoy.config.listener.v3.Listener"},
		{"envoy.config.listener.v3.Listener", "envoy.config.listener.v3.Listener"},
		{"example.com/types/my.pkg.Thing", "my.pkg.Thing"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := TypeFromURL(tt.in); got != tt.want {
			t.Errorf("TypeFromURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCheckType(t *testing.T) {
	const ldsURL = "type.googleapis.com/" + ldsType
	tests := []struct {
		name    string
		in      string
		typeURL string
		wantErr string
	}{
		{"old-style always passes", "foo", ldsURL, ""},
		{"old-style that looks typed", "xdstp-ish/envoy.config.cluster.v3.Cluster/foo", ldsURL, ""},
		{"match", "xdstp://a/" + ldsType + "/foo", ldsURL, ""},
		{"match without prefix", "xdstp://a/" + ldsType + "/foo", ldsType, ""},
		{"mismatch", "xdstp://a/envoy.config.cluster.v3.Cluster/foo", ldsURL, `resource type "envoy.config.cluster.v3.Cluster" in the name does not match "` + ldsType + `"`},
		{"full URL in name does not match", "xdstp://a/type.googleapis.com%2F" + ldsType + "/foo", ldsURL, `resource type "type.googleapis.com"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckType(n, tt.typeURL)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckType(%q, %q) = %v, want nil", tt.in, tt.typeURL, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckType(%q, %q) = %v, want error containing %q", tt.in, tt.typeURL, err, tt.wantErr)
			}
		})
	}
}

func TestExpandTemplate(t *testing.T) {
	tests := []struct {
		name, template, target, want string
	}{
		{"no %s", "/name/template", "[::1]:8080", "/name/template"},
		{"no %s xdstp", "xdstp://a/T/fixed", "[::1]:8080", "xdstp://a/T/fixed"},
		{"old-style verbatim", "%s", "[::1]:8080", "[::1]:8080"},
		{"old-style with path", "/name/template/%s", "a b?c", "/name/template/a b?c"},
		{"xdstp plain host", "xdstp://a/" + ldsType + "/%s", "server.example.com", "xdstp://a/" + ldsType + "/server.example.com"},
		{"xdstp ipv4", "xdstp://a/T/%s", "0.0.0.0:8080", "xdstp://a/T/0.0.0.0:8080"},
		{"xdstp ipv6 brackets encoded", "xdstp://a/T/%s", "[::1]:8080", "xdstp://a/T/%5B::1%5D:8080"},
		{"xdstp slash kept", "xdstp://a/T/%s", "my/service/region", "xdstp://a/T/my/service/region"},
		{"xdstp reserved characters", "xdstp://a/T/%s", "a b?c#d%e", "xdstp://a/T/a%20b%3Fc%23d%25e"},
		{"xdstp PathEscape set", "xdstp://a/T/%s", "!'()*;,:@&=+$~", "xdstp://a/T/%21%27%28%29%2A%3B%2C:@&=+$~"},
		{"xdstp every %s replaced", "xdstp://a/T/grpc/%s?target=%s", "x y", "xdstp://a/T/grpc/x%20y?target=x%20y"},
		{"xdstp: prefix without //", "xdstp:%s", "a b", "xdstp:a%20b"},
		{"params after target", "xdstp://a/T/grpc/client/%s?project_id=1234", "server.example.com", "xdstp://a/T/grpc/client/server.example.com?project_id=1234"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpandTemplate(tt.template, tt.target); got != tt.want {
				t.Errorf("ExpandTemplate(%q, %q) = %q, want %q", tt.template, tt.target, got, tt.want)
			}
		})
	}
}

// An expanded xdstp template must parse back to the target as the id.
func TestExpandTemplateParses(t *testing.T) {
	for _, target := range []string{"server.example.com", "[::1]:8080", "a/b c/%d", "x?y#z&w=1", "é+ü"} {
		s := ExpandTemplate("xdstp://auth/"+ldsType+"/%s", target)
		n, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		want := Name{Scheme: Scheme, Authority: "auth", Type: ldsType, ID: target}
		if diff := cmp.Diff(want, n); diff != "" {
			t.Errorf("Parse(ExpandTemplate(..., %q)) mismatch (-want +got):\n%s", target, diff)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"server.example.com",
		"",
		"xdstp://a/T/id",
		"xdstp:///T/id?",
		"xdstp://a.example/envoy.config.listener.v3.Listener/grpc/client/x?b=2&a=1",
		"xdstp://f%25%2F%3F%23o/T/b%25:%3F%23%5B%5Dar//baz?%25%26%3D=%26%3D%2B",
		"xdstp://[::1]:80/T/x%2Fy?k&k=2&=v#frag",
		"xdstp://u@h/T/a+b?a+b=c d",
		"xdstp:x",
		"xdstp://a/T/%zz",
		"xdstp://endpoints.example/T/backend/z1/ep-1",
		"xdstp://endpoints.example/T/backend/z1/*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		auth, typ, plain := SplitPlain(s)
		if bauth, btyp, bplain := SplitPlain([]byte(s)); bplain != plain || string(bauth) != auth || string(btyp) != typ {
			t.Fatalf("SplitPlain([]byte(%q)) = %q, %q, %v; SplitPlain gave %q, %q, %v", s, bauth, btyp, bplain, auth, typ, plain)
		}
		if err != nil {
			if plain {
				t.Fatalf("SplitPlain(%q) = %q, %q, true; Parse: %v", s, auth, typ, err)
			}
			return
		}
		if g, ok := GlobOf(s); true {
			if pg, pok := globOfParsed(s); g != pg || ok != pok {
				t.Fatalf("GlobOf(%q) = %q, %v; parsed, %q, %v", s, g, ok, pg, pok)
			}
		}
		if plain && (auth != n.Authority || typ != n.Type || n.ContextParams != nil || n.String() != s) {
			t.Fatalf("SplitPlain(%q) = %q, %q, true; Parse: %+v, String %q", s, auth, typ, n, n.String())
		}
		c := n.String()
		if !n.IsXDSTP() && c != s {
			t.Fatalf("old-style %q: String() = %q", s, c)
		}
		n2, err := Parse(c)
		if err != nil {
			t.Fatalf("Parse(%q) = %+v; String() = %q does not parse: %v", s, n, c, err)
		}
		if diff := cmp.Diff(n, n2); diff != "" {
			t.Fatalf("Parse(%q).String() = %q re-parses differently (-first +second):\n%s", s, c, diff)
		}
		if c2 := n2.String(); c2 != c {
			t.Fatalf("canonical form not stable: %q then %q", c, c2)
		}
	})
}

func TestGlobOf(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/z1/m1", "xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/z1/*", true},
		{"xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/m?b=2&a=1", "xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/*?a=1&b=2", true},
		{"xdstp://a/envoy.config.endpoint.v3.LbEndpoint/single", "", false},
		{"xdstp://a/envoy.config.endpoint.v3.LbEndpoint/backend/*", "", false},
		{"old-style/name", "", false},
	} {
		got, ok := GlobOf(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("GlobOf(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if !IsGlob("xdstp://a/T/backend/*?x=1") || IsGlob("xdstp://a/T/backend/m") || IsGlob("name/*") {
		t.Error("IsGlob")
	}
}

// TestSplitPlain: a canonical xdstp name with nothing encoded is split
// where it stands, and Canonical gives it back as it is, the very string;
// any other name is left to Parse.
func TestSplitPlain(t *testing.T) {
	for _, tc := range []struct {
		in        string
		auth, typ string // "" and not plain when typ is ""
		canonical string
	}{
		{in: "xdstp://a.example/envoy.config.cluster.v3.Cluster/c1", auth: "a.example", typ: "envoy.config.cluster.v3.Cluster", canonical: "xdstp://a.example/envoy.config.cluster.v3.Cluster/c1"},
		{in: "xdstp:///T/x/y:z@w", typ: "T", canonical: "xdstp:///T/x/y:z@w"},
		{in: "xdstp://[::1]:80/T/id/", auth: "[::1]:80", typ: "T", canonical: "xdstp://[::1]:80/T/id/"},
		{in: "server.example.com", canonical: "server.example.com"},
		{in: "xdstp://a/T/%41b", canonical: "xdstp://a/T/Ab"},
		{in: "xdstp://a/T/a%3Fb", canonical: "xdstp://a/T/a%3Fb"},
		{in: "xdstp://a/T/id?b=2&a=1", canonical: "xdstp://a/T/id?a=1&b=2"},
		{in: "xdstp://a/T/id?", canonical: "xdstp://a/T/id"},
		{in: "xdstp://a/T/id#frag", canonical: "xdstp://a/T/id"},
		{in: "xdstp://u@h/T/id", canonical: "xdstp://u%40h/T/id"},
		{in: "xdstp://a/T/sp ace", canonical: "xdstp://a/T/sp%20ace"},
		{in: "xdstp://a/T/é", canonical: "xdstp://a/T/%C3%A9"},
		{in: "xdstp://a/T/"},
		{in: "xdstp://a//id"},
		{in: "xdstp://a/T"},
		{in: "xdstp:a/T/id"},
	} {
		auth, typ, ok := SplitPlain(tc.in)
		if ok != (tc.typ != "") || auth != tc.auth || typ != tc.typ {
			t.Errorf("SplitPlain(%q) = %q, %q, %v; want %q, %q, %v", tc.in, auth, typ, ok, tc.auth, tc.typ, tc.typ != "")
		}
		if bauth, btyp, bok := SplitPlain([]byte(tc.in)); bok != ok || string(bauth) != auth || string(btyp) != typ {
			t.Errorf("SplitPlain([]byte(%q)) = %q, %q, %v; SplitPlain gave %q, %q, %v", tc.in, bauth, btyp, bok, auth, typ, ok)
		}
		got, err := Canonical(tc.in)
		if tc.canonical == "" {
			if err == nil {
				t.Errorf("Canonical(%q) = %q, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.canonical {
			t.Errorf("Canonical(%q) = %q, %v; want %q", tc.in, got, err, tc.canonical)
		}
		if same := unsafe.StringData(got) == unsafe.StringData(tc.in); same != (ok || !strings.HasPrefix(tc.in, "xdstp:")) {
			t.Errorf("Canonical(%q) returned the input itself: %v", tc.in, same)
		}
	}
}

// BenchmarkGlobOf: the glob collection of a member, which the engine
// looks for with every member a response names.
func BenchmarkGlobOf(b *testing.B) {
	for _, name := range []string{
		"xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/ep-12345",
		"xdstp://endpoints.example/envoy.config.endpoint.v3.LbEndpoint/backend/z1/ep-12345?zone=z1",
	} {
		b.Run(map[bool]string{false: "plain", true: "params"}[strings.Contains(name, "?")], func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				if _, ok := GlobOf(name); !ok {
					b.Fatal("not a member")
				}
			}
		})
	}
}

// BenchmarkSplitPlain: the check the engine makes of an xdstp name at
// every Watch, every does-not-exist timer and every resource a response
// names.
func BenchmarkSplitPlain(b *testing.B) {
	const name = "xdstp://xds.example.com/envoy.config.cluster.v3.Cluster/cluster-123"
	b.ReportAllocs()
	b.SetBytes(int64(len(name)))
	for range b.N {
		if _, _, ok := SplitPlain(name); !ok {
			b.Fatal("not plain")
		}
	}
}
