//go:build !linux

package server

// holdProcessor: the processor keeper (keeper_linux.go) waits in
// epoll_wait, which only Linux has; elsewhere there is none.
func holdProcessor() (release func(), err error) { return func() {}, nil }

// keeperProcs is the number of processors a keeper adds to GOMAXPROCS.
const keeperProcs = 0

// keptProcessors: no keeper holds any.
func keptProcessors() int { return 0 }
