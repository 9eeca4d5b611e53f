//go:build !linux

package server

import (
	"errors"
	"net"
)

// Elsewhere than Linux, every connection is served by a goroutine of its
// own (conn_stream.go).

const haveEventLoop = false

type eventLoop struct{ done chan struct{} }

type loopConn struct{ loop *eventLoop }

type loopRequest uint8

const (
	loopClose loopRequest = 1 << iota
	loopForce
	loopStop
)

func newEventLoop(*Server, *statShard, bool) (*eventLoop, error) {
	return nil, errors.New("server: no event loop on this system")
}

func (l *eventLoop) run()                {}
func (l *eventLoop) request(loopRequest) {}
func (l *eventLoop) add(*loopConn) bool  { return false }
func (lc *loopConn) release()            {}
func (l *eventLoop) notify(*loopConn)    {}

func (s *Server) newLoopConn(net.Conn, int64, *eventLoop) (*conn, error) {
	return nil, errors.New("server: no event loop on this system")
}
