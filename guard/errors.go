package guard

import "errors"

// Sentinel errors. Errors from this package wrap them with context; test
// with errors.Is.
var (
	// ErrNotFound is Get's answer for an ID that does not exist: the
	// filter says it is absent, the negative cache remembers that the
	// source did not have it, or the loader did not find it.
	ErrNotFound = errors.New("guard: not found")
	// ErrClosed is the answer of a Guard after Close.
	ErrClosed = errors.New("guard: closed")
	// ErrInvalid reports an option or argument that makes no sense; the
	// message names it.
	ErrInvalid = errors.New("guard: invalid argument")
	// ErrRebuildRunning reports a Rebuild of a shared membership while
	// another process rebuilds it.
	ErrRebuildRunning = errors.New("guard: a rebuild is already running")
)
