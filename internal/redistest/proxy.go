package redistest

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
)

// A Proxy forwards TCP connections on loopback to a server and can lose a
// reply on purpose: the server runs the request, the client never hears back.
// That is the ambiguous failure a lock client must survive without leaving an
// orphan hold.
type Proxy struct {
	// Addr is the proxy's address, for clients to connect to.
	Addr string

	server string
	ln     net.Listener
	wg     sync.WaitGroup

	mu     sync.Mutex
	arm    []byte // drop the reply to the next request containing this
	always bool   // keep arm after a drop: drop every such reply
	conns  map[net.Conn]struct{}

	dropped atomic.Int64
}

// StartProxy starts a proxy to server.
func StartProxy(server string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), server: server, ln: ln, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// DropNextReply makes the proxy swallow the reply to the next request whose
// bytes contain substr, and then close that connection.
func (p *Proxy) DropNextReply(substr string) {
	p.mu.Lock()
	p.arm, p.always = []byte(substr), false
	p.mu.Unlock()
}

// DropReplies makes the proxy swallow the reply to every request whose bytes
// contain substr (closing each such connection), until StopDropping.
func (p *Proxy) DropReplies(substr string) {
	p.mu.Lock()
	p.arm, p.always = []byte(substr), true
	p.mu.Unlock()
}

// StopDropping ends DropReplies and DropNextReply.
func (p *Proxy) StopDropping() {
	p.mu.Lock()
	p.arm = nil
	p.mu.Unlock()
}

// Dropped returns how many replies the proxy has swallowed.
func (p *Proxy) Dropped() int64 { return p.dropped.Load() }

// Close stops the proxy and closes every connection through it.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.server)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client, server)
		var drop atomic.Bool
		p.wg.Add(2)
		go p.forward(client, server, func(b []byte) { p.maybeArm(b, &drop) })
		go p.backward(server, client, &drop)
	}
}

func (p *Proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
}

// maybeArm marks the connection of a request that matches the armed string.
func (p *Proxy) maybeArm(request []byte, drop *atomic.Bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.arm != nil && bytes.Contains(request, p.arm) {
		if !p.always {
			p.arm = nil
		}
		drop.Store(true)
	}
}

// forward copies client requests to the server, looking at each chunk first.
func (p *Proxy) forward(from, to net.Conn, look func([]byte)) {
	defer p.wg.Done()
	defer closeBoth(from, to)
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			look(buf[:n])
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// backward copies server replies to the client, unless the connection is
// marked: then the reply is swallowed and both sides are closed.
func (p *Proxy) backward(from, to net.Conn, drop *atomic.Bool) {
	defer p.wg.Done()
	defer closeBoth(from, to)
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && drop.Load() {
			p.dropped.Add(1)
			return
		}
		if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func closeBoth(a, b net.Conn) {
	_ = a.Close()
	_ = b.Close()
}
