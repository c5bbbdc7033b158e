package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A Direction selects which way through a [Proxy] a fault applies to.
type Direction uint8

const (
	// ClientToServer is the direction of requests.
	ClientToServer Direction = 1 << iota
	// ServerToClient is the direction of replies.
	ServerToClient
	// Both is ClientToServer and ServerToClient together.
	Both = ClientToServer | ServerToClient
)

// String returns the direction's name.
func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "client->server"
	case ServerToClient:
		return "server->client"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// indexes returns the ways d covers, as indexes into per-way arrays: 0 for
// client to server, 1 for server to client. It panics on an invalid
// direction, which is a bug in the calling test.
func (d Direction) indexes() []int {
	switch d {
	case ClientToServer:
		return []int{0}
	case ServerToClient:
		return []int{1}
	case Both:
		return []int{0, 1}
	}
	panic("faultproxy: invalid " + d.String())
}

// Stats holds a [Proxy]'s counters since it started.
type Stats struct {
	// Accepted counts client connections accepted.
	Accepted int64
	// Active is the number of connections open now.
	Active int
	// BytesClientToServer counts request bytes delivered to the server.
	BytesClientToServer int64
	// BytesServerToClient counts reply bytes delivered to clients.
	BytesServerToClient int64
	// BytesBlackholed counts bytes read and discarded by a blackhole, in
	// either direction.
	BytesBlackholed int64
	// RepliesDropped counts replies swallowed by DropNextReply or DropReplies.
	RepliesDropped int64
	// Resets counts connections closed by ResetAll, CloseAll, or the lifting
	// of a blackhole that had discarded some of their bytes.
	Resets int64
	// Stalled counts connections stalled by StallNext or StallNextReply (a
	// matching request came).
	Stalled int64
}

// faults is the state of one way through the proxy.
type faults struct {
	base, jitter time.Duration
	blackhole    bool
	paused       bool
}

// A Proxy forwards TCP connections from a loopback address to a target
// server, injecting the faults its methods switch on. Its methods are safe
// for concurrent use. A fault applies to connections open when it is set and
// to those accepted later.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by Close, to abort dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of the proxy

	mu      sync.Mutex
	closed  bool
	faults  [2]faults
	changed chan struct{} // closed and replaced whenever faults change
	links   map[*link]struct{}
	arm     []byte // drop the reply to the next request containing this
	always  bool   // keep arm after a drop: drop every such reply
	// stall stalls way stallWay of the connection of the next request
	// containing every one of these.
	stall    [][]byte
	stallWay int

	accepted   atomic.Int64
	bytes      [2]atomic.Int64
	blackholed atomic.Int64
	dropped    atomic.Int64
	resets     atomic.Int64
	stalls     atomic.Int64
}

// Start starts a proxy to target (a "host:port" address) listening on a
// free port of 127.0.0.1. The target need not be up yet: each accepted
// connection dials it, and a failed dial closes the client connection.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:  target,
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		changed: make(chan struct{}),
		links:   make(map[*link]struct{}),
	}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr returns the proxy's "127.0.0.1:port" address, for clients to dial.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address of the server the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetLatency delays every chunk of bytes travelling in dir by base plus a
// random duration in [0, jitter]. Chunks keep their order, so a short delay
// drawn after a long one waits for it. Zero base and jitter remove the
// latency; bytes already queued keep the delay they were given. SetLatency
// panics if base or jitter is negative.
func (p *Proxy) SetLatency(dir Direction, base, jitter time.Duration) {
	if base < 0 || jitter < 0 {
		panic("faultproxy: negative latency")
	}
	p.update(dir, func(f *faults) { f.base, f.jitter = base, jitter })
}

// Blackhole switches the blackhole of dir on or off. While it is on, bytes
// travelling in dir are read and discarded and the connections stay open, so
// clients wait until their own timeouts fire. Switching it off resets (with
// RST) every connection that lost bytes meanwhile: its byte stream has a hole
// that neither end could parse past, just as a real connection would not
// survive TCP giving up its retransmissions.
func (p *Proxy) Blackhole(dir Direction, on bool) {
	p.update(dir, func(f *faults) { f.blackhole = on })
	if on {
		return
	}
	for _, l := range p.snapshot() {
		for _, i := range dir.indexes() {
			if l.lost[i].Load() {
				if l.close(true) {
					p.resets.Add(1)
				}
				break
			}
		}
	}
}

// Pause stops forwarding bytes in dir until Resume. Bytes that arrive
// meanwhile are kept, up to a fixed number of chunks per connection beyond
// which the proxy stops reading and TCP flow control pushes back on the
// sender. Nothing is lost, unless a connection is closed before Resume.
func (p *Proxy) Pause(dir Direction) {
	p.update(dir, func(f *faults) { f.paused = true })
}

// Resume lets bytes flow in dir again after Pause, delivering what was kept
// in order.
func (p *Proxy) Resume(dir Direction) {
	p.update(dir, func(f *faults) { f.paused = false })
}

// StallOne stops forwarding bytes in dir on one open connection, picked at
// random, until the returned resume is called; the other connections carry
// on. That is a TCP connection whose segments are being retransmitted: a
// client that spreads its requests over several connections (rueidis does)
// sees a request sent later on another connection overtake one sent earlier
// on the stalled one, which arrives when resume is called, unless the
// connection was closed meanwhile. StallOne reports false, and resume does
// nothing, when no connection is open.
func (p *Proxy) StallOne(dir Direction) (resume func(), ok bool) {
	links := p.snapshot()
	if len(links) == 0 {
		return func() {}, false
	}
	l := links[rand.IntN(len(links))]
	idx := dir.indexes()
	for _, i := range idx {
		l.stalled[i].Store(true)
	}
	p.update(dir, func(*faults) {}) // wake the writers to look again
	return func() {
		for _, i := range idx {
			l.stalled[i].Store(false)
		}
		p.update(dir, func(*faults) {})
	}, true
}

// StallNext stalls, as StallOne does, the connection that carries the next
// request containing substr, before that request is delivered, until the
// returned resume is called; the other connections carry on. Calling resume
// before such a request came disarms it. The match is made per chunk, as for
// DropNextReply.
func (p *Proxy) StallNext(substr string) (resume func()) {
	if substr == "" {
		panic("faultproxy: empty substring to stall on")
	}
	return p.armStall(ClientToServer, substr)
}

// StallNextReply stalls the replies of the connection that carries the next
// request containing every one of substrs, from the reply to that request
// on, until the returned resume is called: the server runs the request, and
// those sent after it, at once, and the client reads their replies only on
// resume, in order (unless the connection was closed meanwhile). The other
// connections carry on. That is a reply whose segments are being
// retransmitted: a client reads the outcome of a request long after the
// server acted on it. Calling resume before such a request came disarms it.
// The match is made per chunk, as for DropNextReply: each of substrs should
// be short enough not to straddle two chunks (a script's SHA, a key).
func (p *Proxy) StallNextReply(substrs ...string) (resume func()) {
	if len(substrs) == 0 || slices.Contains(substrs, "") {
		panic("faultproxy: empty substring to stall on")
	}
	return p.armStall(ServerToClient, substrs...)
}

// armStall arms StallNext (dir ClientToServer) or StallNextReply (dir
// ServerToClient) and returns their resume.
func (p *Proxy) armStall(dir Direction, substrs ...string) (resume func()) {
	way := dir.indexes()[0]
	p.mu.Lock()
	p.stall, p.stallWay = nil, way
	for _, s := range substrs {
		p.stall = append(p.stall, []byte(s))
	}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.stall = nil
		p.mu.Unlock()
		for _, l := range p.snapshot() {
			l.stalled[way].Store(false)
		}
		p.update(dir, func(*faults) {})
	}
}

// ResetAll closes every open connection abruptly: both the client's and the
// server's side get a TCP RST, as when a peer crashes or a middlebox drops
// the connection. New connections are accepted as usual.
func (p *Proxy) ResetAll() { p.closeAll(true) }

// CloseAll closes every open connection in an orderly way (FIN), as when the
// server or a proxy closes idle or killed clients.
func (p *Proxy) CloseAll() { p.closeAll(false) }

// DropNextReply makes the proxy swallow the reply to the next request whose
// bytes contain substr, and then close that connection: the server runs the
// request, the client never hears back. Closing keeps the reply stream in
// step with the requests; as a side effect, replies to other requests
// pipelined on that connection are lost too. The match is made on each chunk
// as it is delivered to the server, so substr should be short enough not to
// straddle two chunks (a key or a script's SHA is fine).
func (p *Proxy) DropNextReply(substr string) { p.setArm(substr, false) }

// DropReplies is DropNextReply for every matching request, until
// StopDropping.
func (p *Proxy) DropReplies(substr string) { p.setArm(substr, true) }

// StopDropping ends DropNextReply and DropReplies.
func (p *Proxy) StopDropping() {
	p.mu.Lock()
	p.arm = nil
	p.mu.Unlock()
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	active := len(p.links)
	p.mu.Unlock()
	return Stats{
		Accepted:            p.accepted.Load(),
		Active:              active,
		BytesClientToServer: p.bytes[0].Load(),
		BytesServerToClient: p.bytes[1].Load(),
		BytesBlackholed:     p.blackholed.Load(),
		RepliesDropped:      p.dropped.Load(),
		Resets:              p.resets.Load(),
		Stalled:             p.stalls.Load(),
	}
}

// Close stops the proxy: it closes the listener and every connection, and
// waits until all the proxy's goroutines have returned. Calling Close again
// is harmless.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.cancel()
	// No link registers after closed is set, so this catches them all.
	for _, l := range p.snapshot() {
		l.close(false)
	}
	p.wg.Wait()
	if err != nil {
		return fmt.Errorf("faultproxy: %w", err)
	}
	return nil
}

// update applies change to the faults of each way in dir and wakes the
// goroutines waiting for a change.
func (p *Proxy) update(dir Direction, change func(*faults)) {
	idx := dir.indexes()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, i := range idx {
		change(&p.faults[i])
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// state returns the faults of way i and the channel closed at their next
// change.
func (p *Proxy) state(i int) (faults, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults[i], p.changed
}

func (p *Proxy) setArm(substr string, always bool) {
	if substr == "" {
		panic("faultproxy: empty substring to drop replies to")
	}
	p.mu.Lock()
	p.arm, p.always = []byte(substr), always
	p.mu.Unlock()
}

func (p *Proxy) closeAll(rst bool) {
	for _, l := range p.snapshot() {
		if l.close(rst) {
			p.resets.Add(1)
		}
	}
}

// snapshot returns the open links, so that they can be closed without
// holding p.mu, which closing takes.
func (p *Proxy) snapshot() []*link {
	p.mu.Lock()
	defer p.mu.Unlock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			// Out of file descriptors and the like: back off, as
			// net/http does, rather than spin or give up.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.accepted.Add(1)
		p.wg.Add(1)
		go p.serve(client)
	}
}
