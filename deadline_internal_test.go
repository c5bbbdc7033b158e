package redisync

import (
	"context"
	"testing"
	"time"
)

type budgetKey struct{}

// A deadlines hands out a context that ends between d and d plus a step,
// shared while it has d left; a context derived from it stays usable after
// its own end (it is never recycled); a context with values gets one of its
// own, and one that can end is kept.
func TestDeadlines(t *testing.T) {
	s := newDeadlines(400 * time.Millisecond)
	if s.step != 50*time.Millisecond {
		t.Fatalf("step %v", s.step)
	}
	a := s.get()
	dl, ok := a.Deadline()
	if left := time.Until(dl); !ok || left < 300*time.Millisecond || left > 450*time.Millisecond {
		t.Fatalf("Deadline() = %v away, %v", left, ok)
	}
	if b := s.get(); b != a {
		t.Error("a second call within the step got another context")
	}
	child, cancel := context.WithTimeout(a, time.Millisecond)
	<-child.Done()
	cancel()
	if child.Err() != context.DeadlineExceeded || child.Value(budgetKey{}) != nil || a.Err() != nil {
		t.Errorf("after a child's end: %v, %v, %v", child.Err(), child.Value(budgetKey{}), a.Err())
	}
	time.Sleep(s.step + 10*time.Millisecond)
	if c := s.get(); c == a {
		t.Fatal("a context with less than d left was handed out")
	}

	withValue := context.WithValue(context.Background(), budgetKey{}, "v")
	own, cancel := s.within(withValue)
	defer cancel()
	if own.Value(budgetKey{}) != "v" {
		t.Error("the values are lost")
	}
	if _, ok := own.Deadline(); !ok {
		t.Error("no deadline")
	}
	ending, cancelEnding := context.WithCancel(context.Background())
	defer cancelEnding()
	if kept, _ := s.within(ending); kept != ending {
		t.Error("a context that can end is not kept")
	}
}
