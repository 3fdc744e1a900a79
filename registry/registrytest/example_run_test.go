package registrytest_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/xdsengine/xdsengine/registry"
	"github.com/xdsengine/xdsengine/registry/registrytest"
)

// greetingCases are the inputs the greeting type must handle: a valid
// greeting, with the dependency it names, and one that fails validation
// but must still be named, so that the NACK names it.
var greetingCases = []registrytest.Case{
	{Name: "valid", Message: greetingMessage("hello", "Hello!", "hi"), WantName: "hello",
		WantDeps: []registry.Ref{{TypeURL: greetingTypeURL, Name: "hi"}}},
	{Name: "no text", Message: greetingMessage("silent", "", ""), WantName: "silent", WantErr: "text: must not be empty"},
}

// greetingVariantEnv selects, for ExampleRun only, a greeting type with a
// bug in TestGreetingConformance.
const greetingVariantEnv = "REGISTRYTEST_EXAMPLE_GREETING_VARIANT"

// TestGreetingConformance is how the author of a resource type uses the
// kit: one test in the type's package.
func TestGreetingConformance(t *testing.T) {
	rt := greetingType
	if os.Getenv(greetingVariantEnv) == "unnamed-errors" {
		// A common bug: a decoder that validates as it decodes, and
		// returns no name with an error, so that a NACK cannot say which
		// resource was rejected.
		rt.Decoder = registry.DecoderFunc(func(raw []byte, opts registry.DecodeOptions) (registry.DecodeResult, error) {
			res, err := decodeGreeting(raw, opts)
			if err == nil {
				err = validateGreeting(res.Resource, opts)
			}
			if err != nil {
				return registry.DecodeResult{}, err
			}
			return res, nil
		})
	}
	registrytest.Run(t, rt, greetingCases)
}

// ExampleRun shows what Run reports. Run needs the *testing.T of a running
// test, which only the testing package makes, so this example runs
// TestGreetingConformance above in a child process, as
// "go test -run TestGreetingConformance -v" would: once with the greeting
// type, and once with a copy of it that has a bug. It prints the verdict
// of each check Run made, a subtest each, and the kit's explanation of
// each failure.
func ExampleRun() {
	fmt.Print(runConformanceTest("correct"))
	fmt.Print(runConformanceTest("unnamed-errors"))
	// Output:
	// correct: exit code 0
	//   valid: PASS
	//   no_text: PASS
	//   garbage: PASS
	// unnamed-errors: exit code 1
	//   valid: PASS
	//   no_text: FAIL
	//     Decode name = "", want "silent" (the name must be reported even when validation fails; err = text: must not be empty)
	//   garbage: PASS
}

// runConformanceTest runs TestGreetingConformance with the greeting type
// variant in a child process and summarizes its verbose output.
func runConformanceTest(variant string) string {
	self, err := os.Executable() // this test binary
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestGreetingConformance$", "-test.v")
	cmd.Env = append(os.Environ(), greetingVariantEnv+"="+variant,
		// Under -race, a binary otherwise waits a second before it exits.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		log.Fatal(err)
	}

	run := regexp.MustCompile(`^=== RUN +TestGreetingConformance/(\S+)$`)
	verdict := regexp.MustCompile(`--- (PASS|FAIL): TestGreetingConformance/(\S+) `)
	message := regexp.MustCompile(`^\s+\S+\.go:\d+: (.*)$`)
	var order []string
	verdicts, messages := map[string]string{}, map[string][]string{}
	current := ""
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		line := lines.Text()
		if m := run.FindStringSubmatch(line); m != nil {
			current = m[1]
			order = append(order, current)
		} else if m := verdict.FindStringSubmatch(line); m != nil {
			verdicts[m[2]] = m[1]
		} else if m := message.FindStringSubmatch(line); m != nil {
			messages[current] = append(messages[current], m[1])
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: exit code %d\n", variant, cmd.ProcessState.ExitCode())
	for _, name := range order {
		fmt.Fprintf(&b, "  %s: %s\n", name, verdicts[name])
		for _, m := range messages[name] {
			fmt.Fprintf(&b, "    %s\n", m)
		}
	}
	return b.String()
}
