//go:build redisync_mutants

package scripts

import (
	"strings"
	"testing"
)

// TestMutantsApply checks that every broken variant still finds the line it
// breaks, and that breaking it changes the script and its digest.
func TestMutantsApply(t *testing.T) {
	for _, m := range mutants {
		s := *m.script
		if !strings.Contains(s.Source, m.old) {
			t.Errorf("%s: %s does not contain %q", m.name, s.Name, m.old)
			continue
		}
		broken := mutate(s, m.old, m.new)
		if broken.Source == s.Source || broken.SHA1 == s.SHA1 {
			t.Errorf("%s: mutate changed nothing", m.name)
		}
	}
}
