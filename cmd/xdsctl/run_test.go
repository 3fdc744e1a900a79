package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsengine/xdsengine/bootstrap"
	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/types/cds"
	"github.com/xdsengine/xdsengine/types/eds"
	"github.com/xdsengine/xdsengine/types/lds"
	"github.com/xdsengine/xdsengine/types/leds"
	"github.com/xdsengine/xdsengine/types/rds"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"lds", lds.TypeURL},
		{"LDS", lds.TypeURL},
		{"listener", lds.TypeURL},
		{"Listener", lds.TypeURL},
		{lds.TypeURL, lds.TypeURL},
		{"envoy.config.listener.v3.Listener", lds.TypeURL},
		{"rds", rds.TypeURL},
		{"route", rds.TypeURL},
		{"RouteConfiguration", rds.TypeURL},
		{rds.TypeURL, rds.TypeURL},
		{"cds", cds.TypeURL},
		{"cluster", cds.TypeURL},
		{cds.TypeURL, cds.TypeURL},
		{"eds", eds.TypeURL},
		{"endpoint", eds.TypeURL},
		{"ClusterLoadAssignment", eds.TypeURL},
		{eds.TypeURL, eds.TypeURL},
		{"leds", leds.TypeURL},
		{"collection", leds.TypeURL},
		{leds.TypeURL, leds.TypeURL},
		{"example.com/envoy.config.cluster.v3.Cluster", cds.TypeURL},
		{"xds", ""},
		{"", ""},
		{"type.googleapis.com/envoy.config.listener.v3.Nope", ""},
		{"type.googleapis.com/envoy.config.listener.v2.Listener", ""},
		{"envoy.config.listener.v3.listener", ""}, // message names are case-sensitive
	} {
		got, err := parseType(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("parseType(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), typeForms) {
			t.Errorf("parseType(%q) error %q does not list the accepted forms", tc.in, err)
		}
	}
}

func TestParseArgs(t *testing.T) {
	fs := newFlagSet("test")
	var ef engineFlags
	ef.register(fs)
	pos, help, err := parseArgs(fs, []string{"lds", "--v", "a", "--bootstrap=f", "b", "--", "--c", "-v"})
	if err != nil || help {
		t.Fatal(help, err)
	}
	if want := []string{"lds", "a", "b", "--c", "-v"}; !slices.Equal(pos, want) {
		t.Errorf("positional %q, want %q", pos, want)
	}
	if !ef.verbose || ef.bootstrap != "f" {
		t.Errorf("flags %+v", ef)
	}
}

func TestUsage(t *testing.T) {
	dir := t.TempDir()
	bs := filepath.Join(dir, "bootstrap.json")
	if err := os.WriteFile(bs, []byte(bootstrapJSON("127.0.0.1:1")), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"xds_servers": [{"server_uri": ""}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// No bootstrap in the environment unless a case says so.
	t.Setenv(bootstrap.EnvFile, "")
	t.Setenv(bootstrap.EnvConfig, "")

	for _, tc := range []struct {
		args     []string
		code     int
		stdout   string // a substring of stdout
		stderr   string // a substring of stderr
		noStdout bool
	}{
		// Help and version: stdout, status 0.
		{args: []string{"--version"}, code: exitOK, stdout: "xdsctl " + engine.Version + " (go1."},
		{args: []string{"version"}, code: exitOK, stdout: "go1."},
		{args: []string{"help"}, code: exitOK, stdout: "Exit status:\n  0  success"},
		{args: []string{"-h"}, code: exitOK, stdout: "xdsctl watch   [flags] TYPE NAME..."},
		{args: []string{"--help"}, code: exitOK, stdout: "Examples:"},
		{args: []string{"help", "watch"}, code: exitOK, stdout: "Usage: xdsctl watch"},
		{args: []string{"help", "resolve"}, code: exitOK, stdout: "Usage: xdsctl resolve"},
		{args: []string{"help", "dump"}, code: exitOK, stdout: "xdsctl dump --csds ADDR"},
		{args: []string{"watch", "-h"}, code: exitOK, stdout: "Usage: xdsctl watch"},
		{args: []string{"resolve", "--help"}, code: exitOK, stdout: "Usage: xdsctl resolve"},
		{args: []string{"dump", "lds", "-h"}, code: exitOK, stdout: "Usage:\n  xdsctl dump"},

		// Usage errors: stderr, status 2.
		{args: nil, code: exitUsage, stderr: "xdsctl: no command\nRun 'xdsctl help' for usage.", noStdout: true},
		{args: []string{"watch", "--nope", "lds", "a"}, code: exitUsage, stderr: "Run 'xdsctl watch -h' for usage.", noStdout: true},
		{args: []string{"bogus"}, code: exitUsage, stderr: `xdsctl: unknown command "bogus"`, noStdout: true},
		{args: []string{"--v", "watch"}, code: exitUsage, stderr: "flag --v before the command", noStdout: true},
		{args: []string{"help", "bogus"}, code: exitUsage, stderr: `unknown command "bogus"`, noStdout: true},
		{args: []string{"watch"}, code: exitUsage, stderr: "xdsctl watch: want TYPE and at least one NAME", noStdout: true},
		{args: []string{"watch", "--bootstrap", bs, "lds"}, code: exitUsage, stderr: "want TYPE and at least one NAME", noStdout: true},
		{args: []string{"watch", "--bootstrap", bs, "xds", "a"}, code: exitUsage, stderr: `unknown resource type "xds": want lds|listener, rds|route, cds|cluster, eds|endpoint, leds|collection`, noStdout: true},
		{args: []string{"watch", "--nope", "lds", "a"}, code: exitUsage, stderr: "flag provided but not defined: -nope", noStdout: true},
		{args: []string{"watch", "lds", "a"}, code: exitUsage, stderr: "no bootstrap: pass --bootstrap FILE, or set GRPC_XDS_BOOTSTRAP", noStdout: true},
		{args: []string{"watch", "--resource-timeout", "-1s", "--bootstrap", bs, "lds", "a"}, code: exitUsage, stderr: "--resource-timeout must not be negative", noStdout: true},
		{args: []string{"resolve", "--bootstrap", bs}, code: exitUsage, stderr: "want exactly one LISTENER, got 0", noStdout: true},
		{args: []string{"resolve", "--bootstrap", bs, "a", "b"}, code: exitUsage, stderr: "want exactly one LISTENER, got 2", noStdout: true},
		{args: []string{"resolve", "--bootstrap", bs, "--timeout", "0s", "a"}, code: exitUsage, stderr: "--timeout must be positive", noStdout: true},
		{args: []string{"resolve", "--timeout", "soon", "a"}, code: exitUsage, stderr: `invalid value "soon" for flag -timeout`, noStdout: true},
		{args: []string{"dump"}, code: exitUsage, stderr: "want TYPE and at least one NAME (or --csds ADDR)", noStdout: true},
		{args: []string{"dump", "--bootstrap", bs, "bogus", "a"}, code: exitUsage, stderr: `unknown resource type "bogus"`, noStdout: true},
		{args: []string{"dump", "--csds", "localhost:1", "lds", "a"}, code: exitUsage, stderr: "--csds takes no TYPE or NAME", noStdout: true},
		{args: []string{"dump", "--csds", "localhost:1", "--bootstrap", bs}, code: exitUsage, stderr: "--bootstrap does not go with --csds", noStdout: true},
		{args: []string{"dump", "--csds", "localhost:1", "--wait", "1s"}, code: exitUsage, stderr: "--wait does not go with --csds", noStdout: true},
		{args: []string{"dump", "--csds", ""}, code: exitUsage, stderr: "--csds needs an address", noStdout: true},
		{args: []string{"dump", "--timeout", "1s", "--bootstrap", bs, "lds", "a"}, code: exitUsage, stderr: "--timeout goes with --csds", noStdout: true},

		// Failures: status 1, no usage text.
		{args: []string{"watch", "--bootstrap", filepath.Join(dir, "missing.json"), "lds", "a"}, code: exitFailure, stderr: "reading bootstrap: open ", noStdout: true},
		{args: []string{"resolve", "--bootstrap", bad, "a"}, code: exitFailure, stderr: "bootstrap: xds_servers[0].server_uri: must be a non-empty string", noStdout: true},
	} {
		r := runSync(t, tc.args...)
		name := strings.Join(tc.args, " ")
		if r.code != tc.code {
			t.Errorf("%q: exit status %d, want %d; stderr:\n%s", name, r.code, tc.code, r.stderr)
			continue
		}
		if !strings.Contains(r.stdout, tc.stdout) {
			t.Errorf("%q: stdout does not contain %q:\n%s", name, tc.stdout, r.stdout)
		}
		if !strings.Contains(r.stderr, tc.stderr) {
			t.Errorf("%q: stderr does not contain %q:\n%s", name, tc.stderr, r.stderr)
		}
		if tc.noStdout && r.stdout != "" {
			t.Errorf("%q: stdout not empty:\n%s", name, r.stdout)
		}
		if tc.code == exitOK && r.stderr != "" {
			t.Errorf("%q: stderr not empty:\n%s", name, r.stderr)
		}
		if tc.code == exitFailure && strings.Contains(r.stderr, "Usage:") {
			t.Errorf("%q: a failure printed the usage:\n%s", name, r.stderr)
		}
		if tc.code == exitUsage && (strings.Contains(r.stderr, "Usage:") || strings.Count(r.stderr, "\n") != 2 || !strings.Contains(r.stderr, "for usage.")) {
			t.Errorf("%q: a usage error is not one line and a hint:\n%s", name, r.stderr)
		}
	}
}

// TestMarshalJSONUnknownAny prints a message holding an Any of a type
// that is not linked in, rather than failing.
func TestMarshalJSONUnknownAny(t *testing.T) {
	inner, err := anypb.New(wrapperspb.String("x"))
	if err != nil {
		t.Fatal(err)
	}
	// A known Any holding an unknown one, to check nested Anys too.
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown", Value: []byte{0x0a, 0x01, 'z'}}
	ub, err := anypb.New(unknown)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*anypb.Any{inner, unknown, ub} {
		b, err := marshalJSON(m)
		if err != nil {
			t.Fatalf("marshalJSON(%v): %v", m, err)
		}
		s := string(b)
		if m == inner {
			if want := "{\n  \"@type\": \"type.googleapis.com/google.protobuf.StringValue\",\n  \"value\": \"x\"\n}\n"; s != want {
				t.Errorf("got\n%s\nwant\n%s", s, want)
			}
			continue
		}
		for _, want := range []string{`"unresolved_type_url": "type.googleapis.com/example.Unknown"`, `"value_base64": "CgF6"`} {
			if !strings.Contains(s, want) {
				t.Errorf("output does not contain %q:\n%s", want, s)
			}
		}
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{
		codes.OK:                 "OK",
		codes.InvalidArgument:    "INVALID_ARGUMENT",
		codes.NotFound:           "NOT_FOUND",
		codes.Unavailable:        "UNAVAILABLE",
		codes.FailedPrecondition: "FAILED_PRECONDITION",
		codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
		codes.PermissionDenied:   "PERMISSION_DENIED",
		codes.Code(99):           "Code(99)",
	} {
		if got := codeName(c); got != want {
			t.Errorf("codeName(%v) = %q, want %q", c, got, want)
		}
	}
}
