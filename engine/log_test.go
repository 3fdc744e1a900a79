package engine_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdsengine/xdsengine/engine"
)

// syncBuffer is a bytes.Buffer safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLogs checks what an operator sees at INFO: connection changes,
// fallback, NACKs with their reason; and that DEBUG adds the protocol.
func TestLogs(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := newFixture(t, fixtureOpts{servers: 2, mutate: func(c *engine.Config) { c.Logger = logger }})
	w, _ := f.watch(thing, "a")
	f.watch(thing, "still-requested") // what makes A71 fall back
	st := f.servers[0].WaitStream(t)
	recvNames(t, st, thing, "a", "still-requested")
	st.SendT(t, resp(thing, "1", res(thing, "a", "invalid", "port 70000 out of range")))
	w.Next(t)
	st.RecvT(t)
	f.servers[0].Stop()
	f.servers[1].WaitStream(t).RecvT(t) // fallback
	time.Sleep(20 * time.Millisecond)
	out := buf.String()
	for _, want := range []string{
		`level=WARN msg="xDS response NACKed"`, "port 70000 out of range",
		`level=WARN msg="xDS server unreachable"`, "xDS stream failed with no responses received",
		`level=WARN msg="xDS fallback"`, "from=" + f.servers[0].Addr(), "to=" + f.servers[1].Addr(),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "level=DEBUG") || strings.Contains(out, "xDS request sent") {
		t.Errorf("protocol chatter at INFO:\n%s", out)
	}
}

func TestLogsQuietByDefault(t *testing.T) {
	// No logger: nothing is written anywhere (slog's default is untouched).
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	f := newFixture(t, fixtureOpts{})
	w, _ := f.watch(thing, "a")
	st := f.servers[0].WaitStream(t)
	st.RecvT(t)
	st.SendT(t, resp(thing, "1", res(thing, "a", "invalid", "x")))
	w.Next(t)
	if buf.String() != "" {
		t.Fatalf("engine wrote to the default logger: %s", buf.String())
	}
}

func TestLogsResolvedServerFeatures(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f := newFixture(t, fixtureOpts{serverFeatures: []string{"fail_on_data_errors", "fail_on_data_error"},
		mutate: func(c *engine.Config) { c.Logger = logger }})
	f.watch(thing, "a")
	f.servers[0].WaitStream(t).RecvT(t)
	out := buf.String()
	if !strings.Contains(out, `msg="xDS server features"`) || !strings.Contains(out, "active=[fail_on_data_errors]") ||
		!strings.Contains(out, "ignored=[fail_on_data_error]") {
		t.Fatalf("logs do not show the resolved and the ignored feature:\n%s", out)
	}
	// The line is written once Send returns, which may be after the
	// server has read the request.
	for start := time.Now(); !strings.Contains(out, `msg="xDS request sent"`); out = buf.String() {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("no protocol debug log:\n%s", out)
		}
		time.Sleep(time.Millisecond)
	}
}
