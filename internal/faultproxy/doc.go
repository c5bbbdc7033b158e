// Package faultproxy provides a TCP proxy on loopback that sits between
// clients and a Redis server and injects network faults on demand, for the
// fault-injection tests (internal/chaos).
//
// Each client connection accepted by a [Proxy] gets its own connection to the
// server, and bytes are copied in both directions, client to server and server
// to client, each of which can be faulted on its own (see [Direction]):
//
//   - [Proxy.SetLatency] delays every chunk by a fixed base plus a uniform
//     random jitter (F6, latency and jitter). Chunks never overtake one another,
//     as on a real TCP stream: jitter stretches gaps, it does not reorder.
//   - [Proxy.Blackhole] reads and discards the bytes of a direction while the
//     connections stay open, so clients see timeouts rather than errors (F5,
//     a holder cut off from Redis). A stream that lost bytes can no longer be
//     parsed, so lifting the blackhole resets every connection that lost some,
//     as TCP itself would once its retransmissions gave up.
//   - [Proxy.Pause] stops forwarding a direction and buffers what arrives;
//     [Proxy.Resume] delivers it late but intact, like a network stall (or a
//     SIGSTOP of the network) that heals before anyone times out.
//   - [Proxy.StallOne] and [Proxy.StallNext] hold back the requests of one
//     connection while the others go on (F10, late delivery), and
//     [Proxy.StallNextReply] the replies of the one that carries a given
//     request (F24): the server acts on it at once, the client reads the
//     outcome late.
//   - [Proxy.ResetAll] closes every connection abruptly with a TCP RST, and
//     [Proxy.CloseAll] with an orderly FIN (F9-like: a killed client or
//     connection, as after CLIENT KILL or a middlebox timeout).
//   - [Proxy.DropNextReply] and [Proxy.DropReplies] let the server run a
//     request but swallow its reply and close the connection (F7, the reply of
//     an acquire dropped): the ambiguous failure where the client cannot tell
//     whether its command ran.
//
// [Proxy.Stats] reports counters, and [Proxy.Close] stops the proxy and waits
// for all its goroutines, so tests under goleak stay clean.
//
// The proxy is for tests only: it trusts its caller (a misuse such as an
// invalid Direction panics), runs four goroutines per connection, and buffers
// at most a fixed number of chunks per direction of each connection.
package faultproxy
