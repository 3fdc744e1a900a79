package main

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Example runs the program against its embedded management server and
// backends.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// weighted split, stable 90 / canary 10:
	//   canary         ~10
	//   stable-1       ~45
	//   stable-2       ~45
	// with header x-canary: yes:
	//   canary         ~100
	// stable's priority 0 endpoints UNHEALTHY, priority 1 takes over:
	//   canary         ~10
	//   stable-backup  ~90
	// priority 0 healthy again, traffic returns:
	//   canary         ~10
	//   stable-1       ~45
	//   stable-2       ~45
}
