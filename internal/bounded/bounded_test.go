package bounded_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/go-redisync/redisync/internal/bounded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stuck is a rueidis client whose calls wait, whatever their context, until
// release is closed: a call waiting for another's dial.
type stuck struct {
	rueidis.Client
	release chan struct{}
}

func (s stuck) Do(context.Context, rueidis.Completed) rueidis.RedisResult {
	<-s.release
	return rueidis.NewErrorResult(errors.New("late"))
}

func (s stuck) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	<-s.release
	return make([]rueidis.RedisResult, len(cmds))
}

func TestCallsReturnWhenTheirContextEnds(t *testing.T) {
	s := stuck{release: make(chan struct{})}
	defer close(s.release)
	rc := bounded.Wrap(s)
	if bounded.Wrap(rc) != rc {
		t.Error("a bounded client was wrapped again")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := rc.Do(ctx, rueidis.Completed{}).Error(); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do: %v, want the deadline's error", err)
	}
	for _, res := range rc.DoMulti(ctx, rueidis.Completed{}, rueidis.Completed{}) {
		if !errors.Is(res.Error(), context.DeadlineExceeded) {
			t.Errorf("DoMulti: %v, want the deadline's error", res.Error())
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the calls returned %v after a 50 ms deadline", took)
	}
}

func TestCallsWithoutAnEndWait(t *testing.T) {
	s := stuck{release: make(chan struct{})}
	rc := bounded.Wrap(s)
	got := make(chan error, 1)
	go func() { got <- rc.Do(context.Background(), rueidis.Completed{}).Error() }()
	select {
	case err := <-got:
		t.Fatalf("Do returned %v before its reply, with a context that never ends", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(s.release)
	if err := <-got; err == nil || err.Error() != "late" {
		t.Errorf("Do: %v, want the reply's error", err)
	}
}

// A call its context cut short tells its own outcome later: the Cut's Late
// receives the error the call returned (the first of a DoMulti's).
func TestCutCallsTellTheirOutcomeLate(t *testing.T) {
	s := stuck{release: make(chan struct{})}
	rc := bounded.Wrap(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var cut *bounded.Cut
	if err := rc.Do(ctx, rueidis.Completed{}).Error(); !errors.As(err, &cut) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do: %v, want a Cut of the deadline", err)
	}
	var multi *bounded.Cut
	if err := rc.DoMulti(ctx, rueidis.Completed{})[0].Error(); !errors.As(err, &multi) {
		t.Fatalf("DoMulti: %v, want a Cut", err)
	}
	select {
	case err := <-cut.Late():
		t.Fatalf("the cut call told %v before it returned", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(s.release)
	if err := <-cut.Late(); err == nil || err.Error() != "late" {
		t.Errorf("Late: %v, want the call's own error", err)
	}
	if err := <-multi.Late(); err != nil {
		t.Errorf("Late of a DoMulti whose commands all had replies: %v, want nil", err)
	}
}
