package lrs

import (
	"context"
	"time"

	lrspb "github.com/envoyproxy/go-control-plane/envoy/service/load_stats/v3"
	"google.golang.org/protobuf/proto"

	"github.com/xdsengine/xdsengine/engine"
	"github.com/xdsengine/xdsengine/transport"
)

// stream runs one stream: the node first, then a report at the end of
// each period the server's responses set, and a final report once the
// server is finishing. It reports whether a response arrived, and
// whether the stream's work is over (the final report is done).
func (s *server) stream(tr transport.Transport) (responded, done bool, err error) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	st, err := tr.NewStream(ctx, Method)
	if err != nil {
		return false, false, err
	}
	first, err := proto.Marshal(&lrspb.LoadStatsRequest{Node: s.c.node()})
	if err == nil {
		err = st.Send(first)
	}
	if err != nil {
		return false, false, err
	}
	// Every response is applied, in order: each begins a period, and
	// which clusters it lists decides what the next report drops.
	responses := make(chan *lrspb.LoadStatsResponse)
	ended := make(chan struct{})
	var recvErr error
	go func() {
		defer close(ended)
		for {
			b, err := st.Recv()
			if err != nil {
				recvErr = err
				return
			}
			resp := &lrspb.LoadStatsResponse{}
			if err := proto.Unmarshal(b, resp); err != nil {
				s.c.e.Logger().Warn("LRS response ignored: it does not parse", "server", s.cfg.URI, "error", err)
				continue
			}
			select {
			case responses <- resp:
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() {
		cancel() // ends Recv
		<-ended
	}()

	clock := s.c.e.Clock()
	p := newPeriod(clock)
	defer p.stop()
	finishing := s.finishing
	awaitingSettings := false // finishing before the server said what to report
	for {
		select {
		case <-ctx.Done():
			return responded, false, ctx.Err()
		case <-ended:
			return responded, false, recvErr
		case resp := <-responses:
			responded = true
			s.applySettings(resp, clock.Now())
			if awaitingSettings {
				done, err := s.finalReport(ctx, st, responses, ended)
				return responded, done, err
			}
			p.start(interval(resp))
		case <-p.tick:
			if !p.due() {
				continue // from a timer stopped as it fired
			}
			if _, err := s.report(st); err != nil {
				return responded, false, err
			}
			p.start(p.length)
		case <-finishing:
			finishing = nil
			p.stop()
			if _, settings := s.due(); settings == nil {
				awaitingSettings = true
				continue
			}
			done, err := s.finalReport(ctx, st, responses, ended)
			return responded, done, err
		}
	}
}

// finalReport sends what the stores recorded since their last report.
// If it sent anything, it half-closes the stream and waits until the
// server has ended it (or the deadline cancels ctx): the server has then
// read the report, which cancelling the stream at once could have lost.
// It reports done unless the report could not be sent: the stores keep
// it then, for another stream before the deadline.
func (s *server) finalReport(ctx context.Context, st transport.Stream, responses <-chan *lrspb.LoadStatsResponse, ended <-chan struct{}) (done bool, err error) {
	sent, err := s.report(st)
	if err != nil {
		return false, err
	}
	sc, ok := st.(sendCloser)
	if !sent || !ok || sc.CloseSend() != nil {
		return true, nil
	}
	for {
		select {
		case <-ended:
			return true, nil
		case <-ctx.Done():
			return true, nil
		case <-responses: // too late to matter
		}
	}
}

// period times the reporting period: tick fires at its end.
type period struct {
	clock     engine.Clock
	tick      chan struct{}
	length    time.Duration
	end       time.Time // zero while stopped
	stopTimer func() bool
}

func newPeriod(clock engine.Clock) *period {
	return &period{clock: clock, tick: make(chan struct{}, 1), stopTimer: func() bool { return false }}
}

// start begins a period of length d from now, in place of the current.
func (p *period) start(d time.Duration) {
	p.stopTimer()
	p.length, p.end = d, p.clock.Now().Add(d)
	p.stopTimer = p.clock.AfterFunc(d, func() {
		select {
		case p.tick <- struct{}{}:
		default:
		}
	})
}

func (p *period) stop() {
	p.stopTimer()
	p.end = time.Time{}
}

// due reports whether the current period has ended: a tick may come
// from a timer stopped too late, or be left in the channel by one.
func (p *period) due() bool {
	return !p.end.IsZero() && !p.clock.Now().Before(p.end)
}
