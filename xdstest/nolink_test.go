package xdstest_test

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/xdsengine/xdsengine"

// linkTesting are the packages outside the module that import testing
// and that a command cannot do without, each with why. An entry that no
// command links any more fails the test, so that the list only shrinks.
var linkTesting = map[string]string{
	"github.com/envoyproxy/go-control-plane/pkg/log": "its NewTestLogger (test.go) sits in the logging package that " +
		"go-control-plane's caches and servers import, which xdsrelay serves with; the linker keeps testing's " +
		"package initialisation only",
}

// TestCommandsLinkNoTesting: no production binary (a command under cmd/)
// links the testing package through this module. xdsrelay's --demo runs
// this package's server, which is why NewServer takes a TB of its own.
func TestCommandsLinkNoTesting(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the commands' packages: %v", err)
	}
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command(goTool, append([]string{"list"}, args...)...).Output()
		if err != nil {
			var stderr []byte
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				stderr = ee.Stderr
			}
			t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return strings.Fields(string(out))
	}
	commands := list("-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "../cmd/...")
	if len(commands) == 0 {
		t.Fatal("go list found no command under cmd/")
	}
	linked := map[string]bool{} // third-party importers of testing, any command
	for _, cmd := range commands {
		for _, line := range list("-deps", "-f", `{{.ImportPath}}|{{join .Imports ","}}`, cmd) {
			pkg, imports, _ := strings.Cut(line, "|")
			if !slices.Contains(strings.Split(imports, ","), "testing") {
				continue
			}
			switch _, allowed := linkTesting[pkg]; {
			case pkg == modulePath || strings.HasPrefix(pkg, modulePath+"/"):
				t.Errorf("%s links %s, which imports testing: a production binary carries no test kit", cmd, pkg)
			case !allowed:
				t.Errorf("%s links %s, which imports testing: avoid it, or add it to linkTesting saying why it cannot be", cmd, pkg)
			default:
				linked[pkg] = true
			}
		}
	}
	for pkg, why := range linkTesting {
		if !linked[pkg] {
			t.Errorf("no command links %s any more: remove it from linkTesting (%s)", pkg, why)
		}
	}
}
