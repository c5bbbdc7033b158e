package layout

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	cases := map[string]uint16{
		"123456789":     12739, // the spec's CRC16 check value 0x31C3 mod 16384
		"foo":           12182,
		"{user1000}.a":  Slot("user1000"),
		"a{}b":          Slot("a{}b"),
		"{}":            15257,
		"{user1000}.b":  Slot("{user1000}.c"),
		"no tag here {": Slot("no tag here {"),
	}
	for key, want := range cases {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestAuxSharesSlot(t *testing.T) {
	for _, name := range []string{"order:42", "{user}:lock", "x{tag}y", "plain", "x}{tag}", "{tag}}"} {
		if err := Check(name); err != nil {
			t.Fatalf("Check(%q) = %v", name, err)
		}
		aux := Aux(MutexChannelPrefix, name)
		if Slot(aux) != Slot(name) {
			t.Errorf("Aux(%q) = %q: slot %d, lock key slot %d", name, aux, Slot(aux), Slot(name))
		}
		if timeout := Tagged(name) + ":uuid:1:rwlock_timeout:1"; Slot(timeout) != Slot(name) {
			t.Errorf("read timeout key %q: slot %d, lock key slot %d", timeout, Slot(timeout), Slot(name))
		}
	}
	if got := Aux("p", "order:42"); got != "p:{order:42}" {
		t.Errorf("Aux without tag = %q", got)
	}
	if got := Aux("p", "{u}:x"); got != "p:{u}:x" {
		t.Errorf("Aux with tag = %q", got)
	}
}

func TestCheckRejects(t *testing.T) {
	for _, name := range []string{"", "a{b", "a{}b", "{}", "a}b", "}", "lock}"} {
		if Check(name) == nil {
			t.Errorf("Check(%q) = nil, want an error", name)
		}
	}
}

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Field
		ok   bool
	}{
		{"21fb3b2a-75e6-4414-a91b-701fdae25c56:7", Field{Client: "21fb3b2a-75e6-4414-a91b-701fdae25c56", Hold: "7"}, true},
		{"u:12:write", Field{Client: "u", Hold: "12", Write: true}, true},
		{"mode", Field{}, false},
		{"u:", Field{}, false},
	} {
		got, ok := ParseField(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseField(%q) = %+v, %v", tc.in, got, ok)
		}
		if ok && got.String() != tc.in {
			t.Errorf("%+v.String() = %q, want %q", got, got.String(), tc.in)
		}
	}
	if p, v, ok := ParseSemEntry(SemEntry(3, 17)); !ok || p != 3 || v != 17 {
		t.Errorf("ParseSemEntry(SemEntry(3, 17)) = %d, %d, %v", p, v, ok)
	}
	if _, _, ok := ParseSemEntry("3"); ok {
		t.Error("ParseSemEntry accepted an entry without a version")
	}
}

func TestLayoutsShareSlot(t *testing.T) {
	for _, name := range []string{"order:42", "{user}:lock"} {
		slot := Slot(name)
		rw, sem, fair, mu, once, el := RWOf(name), SemOf(name), FairOf(name), MutexOf(name), OnceOf(name), ElectionOf(name)
		keys := append(sem.Keys(), rw.Channel, rw.Writers, rw.Timeouts("u:1")+":1", fair.Key, fair.Queue, fair.Alive,
			fair.Channel, fair.Latch, mu.Channel, mu.Latch+":u:1", mu.Token, mu.Fence,
			once.Claim, once.Done, once.Channel, once.Latch+":u:1", el.Key, el.Channel, el.Latch+":u:1")
		for _, k := range keys {
			if Slot(k) != slot {
				t.Errorf("%q: slot %d, the lock's %d", k, Slot(k), slot)
			}
		}
	}
}

// A WaitGroup's channel is Redisson's, braced whatever the name: names whose
// channel would land in another slot than the counter are refused.
func TestLatchLayout(t *testing.T) {
	l := WaitGroupOf("jobs")
	if l.Key != "jobs" || l.Channel != "redisson_countdownlatch__channel__{jobs}" {
		t.Errorf("WaitGroupOf(jobs) = %+v", l)
	}
	for _, name := range []string{"jobs", "batch:7", "a.b-c"} {
		if err := CheckWaitGroup(name); err != nil {
			t.Errorf("CheckWaitGroup(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "{batch}:7", "a}b", "x{y}"} {
		if err := CheckWaitGroup(name); err == nil {
			t.Errorf("CheckWaitGroup(%q) accepted a name whose channel lands in slot %d, its key in %d",
				name, Slot(WaitGroupOf(name).Channel), Slot(name))
		}
	}
}
