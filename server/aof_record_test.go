package server

import (
	"strconv"
	"testing"
)

// TestAppendHeader: a RESP header line for every width of length, as
// strconv writes the number.
func TestAppendHeader(t *testing.T) {
	for _, n := range []int{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 123456789} {
		want := "$" + strconv.Itoa(n) + "\r\n"
		if got := string(appendHeader([]byte("x"), '$', n)); got != "x"+want {
			t.Errorf("%d: %q, want %q", n, got, "x"+want)
		}
	}
}
