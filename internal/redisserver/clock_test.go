package redisserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// A skewed server's TIME follows the steps, forward and back.
func TestSkewedServerSteps(t *testing.T) {
	s, err := StartSkewed()
	if errors.Is(err, ErrNoCompiler) || errors.Is(err, ErrNoServer) && !RequireServer() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	serverTime := func() time.Time {
		v, err := rc.Do(context.Background(), rc.B().Time().Build()).AsIntSlice()
		if err != nil {
			t.Fatal(err)
		}
		return time.Unix(v[0], v[1]*1000)
	}
	if d := time.Until(serverTime()); d > 2*time.Second || d < -2*time.Second {
		t.Fatalf("unstepped clock off by %v", d)
	}
	for _, step := range []time.Duration{time.Hour, -time.Hour} {
		if err := s.Step(step); err != nil {
			t.Fatal(err)
		}
		if d := time.Until(serverTime()) - step; d > 2*time.Second || d < -2*time.Second {
			t.Fatalf("clock stepped by %v is off by %v", step, d)
		}
	}
}
