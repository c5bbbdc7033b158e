package chaos

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redisync/redisync/internal/redisserver"
	"github.com/go-redisync/redisync/internal/redistest"
)

var (
	chaosDuration = flag.Duration("chaos.duration", 60*time.Second, "how long TestChaos injects faults")
	chaosSeed     = flag.Int64("chaos.seed", 0, "the fault schedule's seed (0: from the clock); a run prints its seed")
	chaosFaults   = flag.String("chaos.faults", "", "the fault kinds to inject (default: every kind that applies to the topology)")
	chaosTopology = flag.String("chaos.topology", Standalone, "the lock servers: standalone, cluster (3 masters with a replica each), sentinel or quorum (3 servers under NewQuorum)")
	chaosWorkers  = flag.Int("chaos.workers", 4, "worker processes")
	chaosLease    = flag.Duration("chaos.lease", 1500*time.Millisecond, "every lock's watchdog timeout (a third of it is the heartbeat timeout)")
	chaosReport   = flag.String("chaos.report", "", "write the JSON report to this file (and the table next to it, .md)")
	chaosPark     = flag.String("chaos.park", "", "park holders of this lock only for the faults that park one (default: any lock)")
	chaosHistory  = flag.String("chaos.history", "", "write the recorded history (JSON) to this file, for a closer look")
	chaosCheck    = flag.String("chaos.check", "", "TestCheckHistory: check a history written by -chaos.history again")
	chaosExpect   = flag.String("chaos.expect", "", "an invariant the run must break: the self-test of a broken variant (see internal/mutant)")
)

func TestMain(m *testing.M) {
	if raw := os.Getenv(workerEnv); raw != "" {
		os.Exit(runWorker(raw))
	}
	os.Exit(redistest.Run(m, func() error { return nil }, func() {}))
}

// TestChaos runs the fault-injection suite: worker processes drive every
// primitive against real redis-servers (-chaos.topology) while a seeded
// schedule injects the faults that apply to them; the invariant checkers then read the recorded history. It
// fails on any unexpected violation, or, with -chaos.expect, unless that
// invariant was broken (the self-test of a broken variant).
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite does not run with -short")
	}
	if raceDetector && os.Getenv("REDISYNC_CHAOS_RACE") == "" {
		// Its bounds (I9's one second, I5's renewal interval) are set for
		// workers at full speed; under the race detector, beside other
		// packages' tests, they measure the machine's load instead. .ci/run
		// runs it without -race on each topology.
		t.Skip("the chaos suite runs without -race (set REDISYNC_CHAOS_RACE=1 to run it with)")
	}
	if _, err := redisserver.ServerBinary(); err != nil {
		if redisserver.RequireServer() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	seed := *chaosSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1e9
	}
	kinds := defaultKinds(*chaosTopology)
	if *chaosFaults != "" {
		kinds = strings.Split(*chaosFaults, ",")
	}
	for _, k := range kinds {
		if !slices.Contains(FaultKinds, k) || !applies(k, *chaosTopology) {
			t.Fatalf("-chaos.faults: fault %q is unknown or does not apply to a %s topology", k, *chaosTopology)
		}
	}
	if *chaosTopology == Quorum && *chaosPark != "" && !quorumSlot(*chaosPark) {
		t.Fatalf("-chaos.park: %s does not run on a quorum", *chaosPark)
	}
	t.Logf("seed %d (replay the schedule with -chaos.seed %d)", seed, seed)
	r := newRun(t, seed, kinds, *chaosLease, *chaosTopology)
	r.start(*chaosWorkers)
	r.inject(*chaosDuration)
	h := r.finish()
	h.Seed, h.Duration, h.Redis, h.Mutant = seed, chaosDuration.String(), r.version, os.Getenv("REDISYNC_MUTANT")
	h.Topology = *chaosTopology

	if *chaosHistory != "" {
		js, _ := json.Marshal(h)
		if err := os.WriteFile(*chaosHistory, js, 0o644); err != nil {
			t.Error(err)
		}
	}
	vs := Check(h)
	rep := Summarize(h, vs)
	t.Logf("report:\n%s", rep.Table())
	writeReport(t, rep)
	if inv := *chaosExpect; inv != "" {
		if rep.Violations[inv] == nil || rep.Violations[inv].Unexpected == 0 {
			t.Fatalf("the run was expected to break %s and did not", inv)
		}
		return
	}
	if rep.Failed() {
		// The excerpts first: the summary, last, is what the tail of a long
		// log (all a CI report may keep) shows.
		logExcerpts(t, h, vs)
		t.Errorf("unexpected violations (seed %d): %s; the first: %s", seed, violationSummary(rep), firstUnexpected(h, vs))
	}
	if rep.OpsTotal == 0 || len(h.Faults) == 0 {
		t.Errorf("nothing was exercised: %d operations, %d faults", rep.OpsTotal, len(h.Faults))
	}
}

// logExcerpts logs the history around the first unexpected violations, so
// that a failed run's log shows what led to them.
func logExcerpts(t *testing.T, h *History, vs []Violation) {
	n := 0
	for _, v := range vs {
		if !v.Expected && n < 3 {
			n++
			t.Log(Excerpt(h, v, 120))
		}
	}
}

// firstUnexpected describes the first unexpected violation of vs in h: its
// invariant, lock, time (from the run's first event) and detail.
func firstUnexpected(h *History, vs []Violation) string {
	for _, v := range vs {
		if !v.Expected {
			return fmt.Sprintf("%s on %q at +%s: %s", v.Invariant, v.R, ms(v.T-h.start()), v.Detail)
		}
	}
	return "none"
}

func violationSummary(rep *Report) string {
	var parts []string
	for _, inv := range Invariants {
		if c := rep.Violations[inv]; c.Unexpected > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", inv, c.Unexpected))
		}
	}
	return strings.Join(parts, ", ")
}

// A schedule is the seeded order of faults: rounds, each a shuffle of the
// kinds, so that a short run meets every kind.
type schedule struct {
	rng   *rand.Rand
	kinds []string
	next  []string
}

func (s *schedule) pick() string {
	if len(s.next) == 0 {
		s.next = slices.Clone(s.kinds)
		s.rng.Shuffle(len(s.next), func(i, j int) { s.next[i], s.next[j] = s.next[j], s.next[i] })
	}
	k := s.next[0]
	s.next = s.next[1:]
	return k
}

// TestCheckHistory runs the checkers again over a history saved by
// -chaos.history, named by -chaos.check; without one it has nothing to do.
func TestCheckHistory(t *testing.T) {
	if *chaosCheck == "" {
		t.Skip("no -chaos.check history")
	}
	raw, err := os.ReadFile(*chaosCheck)
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if h.Seed == 0 { // written before histories recorded their run
		h.Seed, h.Duration = *chaosSeed, chaosDuration.String()
	}
	rep := Summarize(&h, Check(&h))
	t.Logf("report:\n%s", rep.Table())
	writeReport(t, rep)
	if rep.Failed() {
		t.Errorf("unexpected violations: %s", violationSummary(rep))
	}
}

// writeReport writes rep where -chaos.report says, as JSON and as tables.
func writeReport(t *testing.T, rep *Report) {
	if *chaosReport == "" {
		return
	}
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(*chaosReport, js, 0o644); err != nil {
		t.Error(err)
	}
	md := strings.TrimSuffix(*chaosReport, ".json") + ".md"
	if err := os.WriteFile(md, []byte(rep.Table()), 0o644); err != nil {
		t.Error(err)
	}
}
