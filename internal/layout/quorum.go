package layout

// QuorumMarker is the key, one per server of a quorum, that tells whether
// the server kept its data: a hash of "from", the server time (ms) from
// which the server votes, and "restarted", "1" when the marker was written
// on a server found without one (it restarted empty, or was flushed) and
// "0" when a new quorum was set up. It has no expiry and no hash tag: a
// quorum's servers are standalone deployments, not shards of a cluster.
//
// A quorum lock keeps the Mutex layout (MutexOf) on each of its servers.
const QuorumMarker = "redisync_quorum_server"

// QuorumProbe prefixes the keys with which a new quorum Client tells whether
// two of its servers are one: QuorumProbe:<nonce>:<i> on server i, read on
// the others, deleted at once, and living a minute at most.
const QuorumProbe = QuorumMarker + ":probe"
