package bootstrap_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/xdsengine/xdsengine/bootstrap"
)

// FuzzParse checks what holds for Parse whatever
// credential types or fields it learns: it never panics and is
// deterministic; an error is reported one problem per line, each line
// "bootstrap: <path>: <problem>" (a JSON syntax error is one such line);
// a result has at least one server, every server (top-level or an
// authority's) has a URI and at least one channel_creds entry with a
// type and, if any, a config that is a JSON object, and every authority's
// listener template starts with xdstp://<authority>/ (raw or, as grpc-go
// writes it, percent-encoded).
func FuzzParse(f *testing.F) {
	for _, in := range bootstrapTableInputs(f) {
		f.Add([]byte(in))
	}
	// Shapes the tables do not have: credential types being added to the
	// parser (their configs checked or not), call credentials, deep and
	// odd JSON.
	for _, in := range []string{
		`{"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "google_default"}]}]}`,
		`{"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "tls", "config": {"ca_certificate_file": "/nonexistent/ca.pem", "certificate_file": "/c.pem", "private_key_file": "/k.pem"}}], "call_creds": [{"type": "jwt_token_file", "config": {"jwt_token_file": "/t"}}]}]}`,
		`{"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "insecure"}], "call_creds": []}], "authorities": {"a": {"xds_servers": [{"server_uri": "t", "channel_creds": [{"type": "tls"}], "call_creds": [{"type": "x"}]}]}}}`,
		`{"xds_servers": [{"server_uri": "s", "channel_creds": [{"type": "insecure"}]}], "node": {"metadata": {"a": [[[[[[[[[[{"b": null}]]]]]]]]]]}}}`,
		`{"xds_servers": [{"server_uri": "\u0000", "channel_creds": [{"type": "\ud800"}]}]}`,
		"{\"xds_servers\": [{\"server_uri\": \"s\", \"channel_creds\": [{\"type\": \"insecure\"}]}], \"authorities\": {\"\xff\": {\"client_listener_resource_name_template\": \"xdstp://\xff/x\"}}}",
	} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := bootstrap.Parse(data)
		b2, err2 := bootstrap.Parse(data)
		if err != nil {
			if b != nil {
				t.Errorf("Parse returned %+v with its error", b)
			}
			if err2 == nil || err2.Error() != err.Error() {
				t.Errorf("Parse is not deterministic: %q, then %v", err, err2)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "bootstrap: ") {
					t.Errorf("error line %q does not start with \"bootstrap: \" (error %q)", line, err)
				}
			}
			return
		}
		if err2 != nil {
			t.Fatalf("Parse is not deterministic: succeeded, then %v", err2)
		}
		if diff := cmp.Diff(b, b2, protocmp.Transform()); diff != "" {
			t.Errorf("Parse is not deterministic (-first +second):\n%s", diff)
		}
		if len(b.Servers) == 0 {
			t.Errorf("no xds_servers in %+v", b)
		}
		checkServers(t, "xds_servers", b.Servers)
		for name, a := range b.Authorities {
			checkServers(t, "authority "+strconv.Quote(name), a.Servers)
			tmpl := a.ClientListenerResourceNameTemplate
			if tmpl != "" && !strings.HasPrefix(tmpl, "xdstp://"+name+"/") && !strings.HasPrefix(tmpl, "xdstp://"+url.PathEscape(name)+"/") {
				t.Errorf("authority %q: template %q does not start with xdstp://<authority>/", name, tmpl)
			}
		}
	})
}

func checkServers(t *testing.T, where string, servers []bootstrap.ServerConfig) {
	t.Helper()
	for i, s := range servers {
		if s.URI == "" {
			t.Errorf("%s[%d]: empty server URI", where, i)
		}
		if len(s.ChannelCreds) == 0 {
			t.Errorf("%s[%d]: no channel_creds", where, i)
		}
		for j, c := range s.ChannelCreds {
			if c.Type == "" {
				t.Errorf("%s[%d].channel_creds[%d]: empty type", where, i, j)
			}
			if c.Config != nil && (!json.Valid(c.Config) || !bytes.HasPrefix(bytes.TrimSpace(c.Config), []byte("{"))) {
				t.Errorf("%s[%d].channel_creds[%d]: config %q is not a JSON object", where, i, j, c.Config)
			}
		}
	}
}

// bootstrapTableInputs returns the "in" inputs of the tables in
// bootstrap_test.go, read from its source. The tables are local to their
// test functions, and the parser (with them) is being extended on another
// branch: reading the source keeps one copy of each input and seeds the
// fuzzer with every case added there, without a change here. An input is
// a string literal, or constants and the bootstrapWith* helpers joined by
// "+"; anything else is skipped, and too few inputs fail the target, so
// that a reshaped table is noticed.
func bootstrapTableInputs(f *testing.F) []string {
	f.Helper()
	const file = "bootstrap_test.go"
	ast0, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		f.Fatalf("reading the seed inputs: %v", err)
	}
	helpers := map[string]func(string) string{
		"bootstrapWith":       bootstrapWith,
		"bootstrapWithServer": bootstrapWithServer,
	}
	consts := map[string]string{}
	var eval func(e ast.Expr) (string, bool)
	eval = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.STRING {
				s, err := strconv.Unquote(e.Value)
				return s, err == nil
			}
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok
		case *ast.ParenExpr:
			return eval(e.X)
		case *ast.BinaryExpr:
			if e.Op == token.ADD {
				x, okX := eval(e.X)
				y, okY := eval(e.Y)
				return x + y, okX && okY
			}
		case *ast.CallExpr:
			if id, ok := e.Fun.(*ast.Ident); ok && helpers[id.Name] != nil && len(e.Args) == 1 {
				if arg, ok := eval(e.Args[0]); ok {
					return helpers[id.Name](arg), true
				}
			}
		}
		return "", false
	}
	var inputs []string
	// Source order: a constant is declared before the tables using it.
	ast.Inspect(ast0, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			if n.Tok != token.CONST {
				break
			}
			for _, spec := range n.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := eval(vs.Values[i]); ok {
							consts[name.Name] = s
						}
					}
				}
			}
		case *ast.KeyValueExpr:
			if key, ok := n.Key.(*ast.Ident); ok && key.Name == "in" {
				if s, ok := eval(n.Value); ok {
					inputs = append(inputs, s)
				}
			}
		}
		return true
	})
	if len(inputs) < 40 {
		f.Fatalf("only %d seed inputs read from the tables of %s: has their shape changed?", len(inputs), file)
	}
	return inputs
}
