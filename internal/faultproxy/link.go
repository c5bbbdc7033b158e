package faultproxy

import (
	"bytes"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// chunkSize is the most a reader takes from a socket at once.
	chunkSize = 32 << 10
	// queueLen is how many chunks a direction of a connection holds while
	// delayed or paused before its reader stops reading.
	queueLen = 256
)

// A link is one client connection and its connection to the server. Each of
// its two ways has a reader, which applies the faults seen on arrival
// (blackhole, latency) and queues the bytes, and a writer, which waits for
// their delivery time and for the way to be unpaused, then delivers them.
// Splitting the two keeps latency from accumulating over pipelined chunks.
type link struct {
	p      *Proxy
	client net.Conn
	server net.Conn
	done   chan struct{} // closed when the link is closed
	once   sync.Once

	drop    atomic.Bool    // a matching request went out: swallow the reply
	lost    [2]atomic.Bool // a blackhole discarded bytes of way i
	stalled [2]atomic.Bool // way i of this link alone is paused (StallOne, StallNext, StallNextReply)
}

// chunk is bytes in transit and the time they are due.
type chunk struct {
	data []byte
	due  time.Time
}

// serve dials the target for client and runs the link until it is closed.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	server, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		_ = client.Close()
		return
	}
	l := &link{p: p, client: client, server: server, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.links[l] = struct{}{}
	p.mu.Unlock()

	ends := [2][2]net.Conn{{client, server}, {server, client}}
	for i, e := range ends {
		q := make(chan chunk, queueLen)
		p.wg.Add(2)
		go l.read(i, e[0], q)
		go l.write(i, e[1], q)
	}
}

// close closes both connections of the link, with a TCP RST if rst is set,
// and reports whether this call closed it.
func (l *link) close(rst bool) bool {
	closed := false
	l.once.Do(func() {
		closed = true
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
		close(l.done)
		for _, c := range []net.Conn{l.client, l.server} {
			if tc, ok := c.(*net.TCPConn); ok && rst {
				// Linger 0 makes Close discard unsent data and send RST.
				_ = tc.SetLinger(0)
			}
			_ = c.Close()
		}
	})
	return closed
}

// read takes bytes of way i from the socket and queues them. Any error, end
// of stream included, closes the whole link: Redis clients do not half-close.
func (l *link) read(i int, from net.Conn, q chan<- chunk) {
	defer l.p.wg.Done()
	defer l.close(false)
	buf := make([]byte, chunkSize)
	for {
		n, err := from.Read(buf)
		if n > 0 && !l.take(i, buf[:n], q) {
			return
		}
		if err != nil {
			return
		}
	}
}

// take applies the arrival faults to data read on way i and queues it. It
// reports false when the link is to be closed.
func (l *link) take(i int, data []byte, q chan<- chunk) bool {
	p := l.p
	f, _ := p.state(i)
	if i == 1 && l.drop.Load() {
		// The reply to a marked request: swallow it and, by returning
		// false, close the link.
		p.dropped.Add(1)
		return false
	}
	if f.blackhole {
		l.lost[i].Store(true)
		p.blackholed.Add(int64(len(data)))
		return true
	}
	delay := f.base
	if f.jitter > 0 {
		delay += time.Duration(rand.Int64N(int64(f.jitter) + 1))
	}
	// A chunk due before the one ahead of it still waits in the queue:
	// bytes of one stream must not overtake each other. Delivering each
	// chunk from its own timer would reorder them.
	select {
	case q <- chunk{data: bytes.Clone(data), due: time.Now().Add(delay)}:
		return true
	case <-l.done:
		return false
	}
}

// write delivers the queued chunks of way i once due and while the way is not
// paused.
func (l *link) write(i int, to net.Conn, q <-chan chunk) {
	defer l.p.wg.Done()
	defer l.close(false)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		var c chunk
		select {
		case c = <-q:
		case <-l.done:
			return
		}
		if wait := time.Until(c.due); wait > 0 && wait <= preciseBelow {
			sleepPrecisely(wait)
		} else if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-l.done:
				return
			}
		}
		if i == 0 {
			l.p.matchStall(c.data, l)
		}
		if !l.waitResumed(i) {
			return
		}
		if i == 0 {
			// Mark before the server can answer, so the reply cannot
			// slip past.
			l.p.match(c.data, l)
		}
		n, err := to.Write(c.data)
		l.p.bytes[i].Add(int64(n))
		if err != nil {
			return
		}
	}
}

// waitResumed waits until way i is not paused, for every link or for this
// one. It reports false if the link is closed first.
func (l *link) waitResumed(i int) bool {
	for {
		f, changed := l.p.state(i)
		if !f.paused && !l.stalled[i].Load() {
			return true
		}
		select {
		case <-changed:
		case <-l.done:
			return false
		}
	}
}

// matchStall stalls a way of l, from this request on (its requests) or from
// its reply on (its replies), if request contains every string armed by
// StallNext or StallNextReply. It runs before the request is delivered, so
// that its reply cannot slip past.
func (p *Proxy) matchStall(request []byte, l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stall == nil {
		return
	}
	for _, s := range p.stall {
		if !bytes.Contains(request, s) {
			return
		}
	}
	p.stall = nil
	l.stalled[p.stallWay].Store(true)
	p.stalls.Add(1)
}

// match marks l to lose its next reply if request contains the armed string.
func (p *Proxy) match(request []byte, l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.arm != nil && bytes.Contains(request, p.arm) {
		if !p.always {
			p.arm = nil
		}
		l.drop.Store(true)
	}
}
