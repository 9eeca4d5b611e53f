package server

import (
	"math"
	"runtime/debug"
	"time"
)

// The Redis backend keeps no filters, so the process's live heap is
// small (connections' buffers, the opened filters' metadata), and with
// GOGC=100 the collector ran every few megabytes of the garbage commands
// leave (go-redis's command and reply objects: about four per item);
// at -P 16 the collector took a tenth of the server's CPU time
// (docs/BENCHMARKS.md, issue 15). So with Config.ManageGoRuntime the
// Redis backend turns GOGC's trigger off and keeps Go's soft memory
// limit at what is live plus room, as the memory backend does
// (setMemoryLimit: at least redisRoom, 64 MiB, of room), read again ten
// times a second: a collection per 64 MiB of garbage.

// manageRedisMemory runs until the server shuts down, then gives the
// runtime back its settings.
func (s *Server) manageRedisMemory() {
	limit := setMemoryLimit(-1, redisRoom)
	percent := debug.SetGCPercent(-1)
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(math.MaxInt64)
	}()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			limit = setMemoryLimit(limit, redisRoom)
		}
	}
}
