package bloom

import (
	"fmt"
	"testing"
)

// Prefetch is a hint: it changes no answer, and it does not wait for an
// Add that holds the filter.
func TestScalablePrefetch(t *testing.T) {
	s := viewFilter(t, 1000, 100)
	want, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s.Prefetch()
	s.mu.Lock() // as an Add would
	done := make(chan struct{})
	go func() { s.Prefetch(); close(done) }()
	<-done // a Prefetch that waited for the lock would hang here
	s.mu.Unlock()
	got, err := s.MarshalBinary()
	if err != nil || string(got) != string(want) {
		t.Fatalf("the filter changed under Prefetch (err %v)", err)
	}
	for i := range 100 {
		if !s.Test(fmt.Appendf(nil, "before-%d", i)) {
			t.Fatalf("item %d lost", i)
		}
	}
	var empty Scalable
	empty.Prefetch() // a zero filter has no bits: still no fault
}
