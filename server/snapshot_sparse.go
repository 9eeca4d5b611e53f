package server

import (
	"io"

	"github.com/bloomery/bloom/internal/encio"
)

// sparseWriter writes a snapshot to its file through a buffer, leaving
// every holeBlock-aligned block of zero bytes as a hole: the file system
// allocates nothing for it, and the page cache holds nothing of it. A
// large filter holding few items is mostly zeros (its bit array is
// allocated lazily in memory too), so its snapshot costs the disk and
// the page cache only its set bits. Readers see the zeros as usual.
type sparseWriter struct {
	f        sparseFile
	buf      []byte
	off      int64 // file offset of buf[0]
	hole     bool  // the file ends in a hole so far
	unsynced int64 // bytes written since the last fsync (syncEvery)
}

// syncEvery is how many bytes the writer writes between fsyncs of a file
// that can be fsynced: as Redis fsyncs a rewritten AOF or an RDB every 4
// MB (aof-rewrite-incremental-fsync, rdb-save-incremental-fsync), so that
// a snapshot's writeback goes to the disk in pieces instead of one burst
// behind which the log's own fsyncs wait (docs/BENCHMARKS.md,
// "Snapshots fsynced as they are written").
const syncEvery = 8 << 20

// syncer is a sparseFile that can be fsynced as it is written.
type syncer interface{ Sync() error }

// holeBlock is the unit of holes: a multiple of every file system's
// block size.
const holeBlock = 64 << 10

// sparseBuffer is how much sparseWriter buffers before writing.
const sparseBuffer = 1 << 20

// sparseFile is what sparseWriter writes to: a file it can seek in and
// extend (an *os.File, an atomicfile.File).
type sparseFile interface {
	io.Writer
	io.Seeker
	Truncate(size int64) error
}

func newSparseWriter(f sparseFile) *sparseWriter {
	return &sparseWriter{f: f, buf: make([]byte, 0, sparseBuffer+holeBlock)}
}

func (w *sparseWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		c := min(len(p), sparseBuffer+holeBlock-len(w.buf))
		w.buf = append(w.buf, p[:c]...)
		p = p[c:]
		if len(w.buf) >= sparseBuffer {
			if err := w.drain(false); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// drain writes the buffer's whole blocks (everything, with all), seeking
// over the zero ones.
func (w *sparseWriter) drain(all bool) error {
	b := w.buf
	for len(b) > 0 {
		// The next piece ends at a block boundary of the file.
		size := holeBlock - int(w.off%holeBlock)
		if size > len(b) {
			if !all {
				break
			}
			size = len(b)
		}
		piece := b[:size]
		if size == holeBlock && encio.AllZero(piece) {
			if _, err := w.f.Seek(int64(size), io.SeekCurrent); err != nil {
				return err
			}
			w.hole = true
		} else {
			if _, err := w.f.Write(piece); err != nil {
				return err
			}
			w.hole = false
			if w.unsynced += int64(size); w.unsynced >= syncEvery {
				if s, ok := w.f.(syncer); ok {
					if err := s.Sync(); err != nil {
						return err
					}
				}
				w.unsynced = 0
			}
		}
		w.off += int64(size)
		b = b[size:]
	}
	w.buf = append(w.buf[:0], b...)
	return nil
}

// Flush writes everything buffered; a file that ends in a hole is
// extended to its full size.
func (w *sparseWriter) Flush() error {
	if err := w.drain(true); err != nil {
		return err
	}
	if w.hole {
		return w.f.Truncate(w.off)
	}
	return nil
}
