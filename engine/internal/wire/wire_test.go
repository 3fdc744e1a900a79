package wire

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) AfterFunc(d time.Duration, f func()) func() bool {
	return time.AfterFunc(d, f).Stop
}

// add holds g for a notification about about and returns its done.
func add(g *Gate, about Pending) func() {
	h := new(Hold)
	g.Hold(h, about)
	return h.Release
}

func TestGate(t *testing.T) {
	g := NewGate(wallClock{})
	a := Pending{TypeURL: "t", Name: "a"}
	doneA1 := add(g, a)
	doneA2 := add(g, a)
	doneB := add(g, Pending{TypeURL: "t", Name: "b"})
	doneB()
	doneB() // a second call counts once
	g.arm()
	if g.isOpen() {
		t.Fatal("gate open with two notifications outstanding")
	}
	pending, n := g.outstanding()
	if len(pending) != 1 || pending[0] != a || n != 2 {
		t.Fatalf("outstanding = %v, %d; want [%v], 2", pending, n, a)
	}
	doneA1()
	doneA2()
	if _, ok := g.openedAt(); !ok {
		t.Fatal("gate still closed after every done")
	}
}

func TestGateOpensOnlyWhenArmed(t *testing.T) {
	g := NewGate(wallClock{})
	done := add(g, Pending{Name: "x"})
	done()
	if g.isOpen() {
		t.Fatal("an early done opened the gate before it was armed")
	}
	g.arm()
	if !g.isOpen() {
		t.Fatal("armed gate with nothing outstanding is closed")
	}
}

func TestQuoteName(t *testing.T) {
	tests := []struct {
		name, want string
	}{
		{"plain", `"plain"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{strings.Repeat("é", 200), `"` + strings.Repeat("é", 128) + `"… (400 bytes)`},
	}
	for _, tt := range tests {
		if got := QuoteName(tt.name); got != tt.want {
			t.Errorf("QuoteName(%.20q…) = %.40q…, want %.40q…", tt.name, got, tt.want)
		}
	}
}

func TestNACKDetailBounds(t *testing.T) {
	var tl tally
	if tl.nackDetail() != nil {
		t.Fatal("no failures, yet a NACK")
	}
	for i := 0; i < maxListedFailures+5; i++ {
		tl.fail("resource index %d: %s", i, strings.Repeat("\xff", 3000))
	}
	st := tl.nackDetail()
	msg := st.GetMessage()
	if !utf8.ValidString(msg) {
		t.Fatal("NACK message is not valid UTF-8")
	}
	if !strings.HasSuffix(msg, "; and 5 more]") {
		t.Errorf("NACK message ends %q, want the count of failures left out", msg[len(msg)-30:])
	}
	if tl.invalid != maxListedFailures+5 {
		t.Errorf("invalid = %d, want %d", tl.invalid, maxListedFailures+5)
	}
	if max := maxListedFailures*(maxFailureBytes*3+2) + 100; len(msg) > max {
		t.Errorf("NACK message of %d bytes, want at most %d", len(msg), max)
	}
}

func TestPeekTypeAndNonce(t *testing.T) {
	valid, err := proto.Marshal(&discoverypb.DiscoveryResponse{VersionInfo: "1", TypeUrl: "type.example/T"})
	if err != nil {
		t.Fatal(err)
	}
	// A nonce that is not UTF-8, which proto.Marshal would refuse.
	valid = protowire.AppendTag(valid, 5, protowire.BytesType)
	valid = protowire.AppendString(valid, "n\xff1")
	tests := []struct {
		desc              string
		b                 []byte
		wantType, wantNon string
		wantOK            bool
	}{
		{"whole", valid, "type.example/T", "n\uFFFD1", true},
		{"cut after the type", valid[:len(valid)-3], "type.example/T", "", false},
		{"garbage", []byte{0xff, 0xff, 0xff}, "", "", false},
		{"empty", nil, "", "", false},
	}
	for _, tt := range tests {
		typ, nonce, ok := peekTypeAndNonce(tt.b)
		if typ != tt.wantType || nonce != tt.wantNon || ok != tt.wantOK {
			t.Errorf("%s: peek = %q, %q, %v; want %q, %q, %v", tt.desc, typ, nonce, ok, tt.wantType, tt.wantNon, tt.wantOK)
		}
	}
}
