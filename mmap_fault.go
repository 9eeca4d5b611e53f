package bloom

import (
	"errors"
	"fmt"
	"runtime/debug"
	"unsafe"
)

// A mapped file truncated underneath its mapping: reading a page past the
// file's new end raises SIGBUS, which the Go runtime turns into a fatal
// error that no recover catches, unless the goroutine asked for a panic
// instead (debug.SetPanicOnFault). Guard asks, recovers the panic of a
// fault inside the mapping, and returns it as an error.

// ErrFileChanged reports a memory-mapped filter file that could no longer
// be read while in use: it was truncated (or its storage failed), so a
// read of the mapping faulted. The filter gives no more answers; close
// it, and open the file again once it is whole.
var ErrFileChanged = errors.New("bloom: filter file changed while in use (truncated?)")

// Guard runs fn, which uses m, and returns an error wrapping
// ErrFileChanged if a read of m's mapping faults during fn, as reading a
// page of a file truncated underneath the mapping does (SIGBUS): without
// Guard that fault kills the process. fn stops at the fault, and the
// answers it got before may be wrong (the file changed): discard them.
//
// Only m's reads from the goroutine calling Guard are covered: fn must
// use m itself, not hand it to other goroutines. A fault anywhere else (a
// nil pointer, another mapping) panics as it would without Guard, and so
// does any other panic. On a filter read into memory Guard just runs fn.
// Guard costs about as much as a Test (15–20 ns, docs/BENCHMARKS.md):
// guard a loop of lookups (or TestMany), not each Test.
func (m *MappedFilter) Guard(fn func()) error { return guard(m.data, fn) }

// guard runs fn and returns a fault reading data during it as an error
// wrapping ErrFileChanged.
func guard(data []byte, fn func()) (err error) {
	if len(data) == 0 {
		fn()
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if off, ok := faultOffset(r, data); ok {
			err = fmt.Errorf("%w: reading byte %d of the file faulted", ErrFileChanged, off)
			return
		}
		panic(r)
	}()
	fn()
	return nil
}

// faultOffset is the offset in data of the address of memory fault r (a
// runtime.Error with the faulting address), and whether r is one at an
// address inside data.
func faultOffset(r any, data []byte) (uintptr, bool) {
	fault, ok := r.(interface {
		error
		Addr() uintptr
	})
	if !ok {
		return 0, false
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	off := fault.Addr() - start // wraps to a huge value below start
	return off, off < uintptr(len(data))
}
