package redisync

import (
	"context"
	"testing"
	"time"
)

type budgetKey struct{}

// A budget carries its parent's values and a deadline, ends with
// DeadlineExceeded when the deadline passes, and goes back to the pool only
// when it has not.
func TestBudget(t *testing.T) {
	parent := context.WithValue(context.Background(), budgetKey{}, "v")
	b := newBudget(parent, time.Hour)
	if b.Value(budgetKey{}) != "v" {
		t.Error("the parent's value is lost")
	}
	if dl, ok := b.Deadline(); !ok || time.Until(dl) < 59*time.Minute {
		t.Errorf("Deadline() = %v, %v", dl, ok)
	}
	if b.Err() != nil {
		t.Errorf("Err() = %v before the deadline", b.Err())
	}
	b.free()

	short := newBudget(parent, 10*time.Millisecond)
	select {
	case <-short.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed after the deadline")
	}
	if short.Err() != context.DeadlineExceeded {
		t.Errorf("Err() = %v after the deadline", short.Err())
	}
	short.free()    // dropped: its channel is closed
	for range 100 { // whatever the pool hands out is fresh
		again := newBudget(context.Background(), time.Hour)
		select {
		case <-again.Done():
			t.Fatal("a budget from the pool is already done")
		default:
		}
		if again.Err() != nil || again.Value(budgetKey{}) != nil {
			t.Fatalf("a budget from the pool carries old state: %v, %v", again.Err(), again.Value(budgetKey{}))
		}
		again.free()
	}
}
