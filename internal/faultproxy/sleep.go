package faultproxy

import "time"

// preciseBelow is the longest delay that sleepPrecisely waits: a Go timer
// that fires while the runtime is idle waits in the network poller, whose
// timeout has a granularity of a millisecond, so a delay of 250 µs took
// about 1.1 ms. Longer delays take a timer, which the link's close can
// interrupt.
const preciseBelow = 2 * time.Millisecond
