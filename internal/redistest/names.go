package redistest

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// names numbers the suffixes that UniqueSuffix makes.
var names atomic.Int64

// UniqueSuffix returns a suffix for a test's key names ("#7") that no other
// call in the process returns. A package's servers outlive one run of a
// test: the second run of -count=2 meets them, and must not find the keys
// the first one left (a Once already done, a claim, a place in a queue).
func UniqueSuffix() string { return fmt.Sprintf("#%d", names.Add(1)) }

// Name returns a key name of the test's own: its name and a UniqueSuffix.
func Name(tb testing.TB) string { return tb.Name() + UniqueSuffix() }
