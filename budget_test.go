package redisync

import (
	"context"
	"testing"
	"time"
)

// A shared budget ends between releaseBudget and releaseBudget+budgetStep
// from when it is handed out, is handed out again while it has releaseBudget
// left, and a context derived from it stays usable after its own end: it is
// never recycled.
func TestSharedBudget(t *testing.T) {
	a := sharedBudget()
	dl, ok := a.Deadline()
	if left := time.Until(dl); !ok || left < releaseBudget-time.Second || left > releaseBudget+budgetStep {
		t.Fatalf("Deadline() = %v away, %v", left, ok)
	}
	if a.Err() != nil {
		t.Fatalf("Err() = %v before the deadline", a.Err())
	}
	if b := sharedBudget(); b != a {
		t.Error("a second release within the step got another budget")
	}
	child, cancel := context.WithTimeout(a, time.Millisecond)
	<-child.Done()
	cancel()
	if child.Err() != context.DeadlineExceeded || child.Value(struct{}{}) != nil || a.Err() != nil {
		t.Errorf("after a child's end: %v, %v, %v", child.Err(), child.Value(struct{}{}), a.Err())
	}
	time.Sleep(budgetStep + 10*time.Millisecond)
	c := sharedBudget()
	if c == a {
		t.Fatal("a budget with less than releaseBudget left was handed out")
	}
	if dl2, _ := c.Deadline(); time.Until(dl2) < releaseBudget-time.Second {
		t.Errorf("the next budget ends in %v", time.Until(dl2))
	}
}
