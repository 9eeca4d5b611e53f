package server

import (
	"context"
	"errors"

	"github.com/bloomery/bloom"
)

// BF.SCANDUMP and BF.LOADCHUNK on the memory backend.
//
// A dump is a header chunk (bloom.Scalable.DumpHeader: the kind-2 file
// header, its parameters and every sub-filter's header, all with CRCs) at
// iterator 0, which answers next = 1, followed by the sub-filters' bit
// arrays in chunks of at most maxDumpChunk bytes that never cross a
// sub-filter. As in RedisBloom, the iterator a chunk comes back with is
// one past the chunk's end in the concatenated bit arrays, plus one:
// LOADCHUNK key 1 <header> makes the filter (zero bits, the recorded
// counts), LOADCHUNK key it <chunk> writes the chunk at it-1-len(chunk).

// maxDumpChunk is RedisBloom's MAX_SCANDUMP_SIZE.
const maxDumpChunk = 16 << 20

func (m *memstore) ScanDump(_ context.Context, key string, iter int64) (int64, []byte, error) {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	if e == nil {
		return 0, nil, errNotFound
	}
	return dumpChunk(e.filter, iter)
}

// dumpChunk is the chunk of f's dump at iter, and the next iterator.
func dumpChunk(f *bloom.Scalable, iter int64) (int64, []byte, error) {
	if iter == 0 {
		return 1, f.DumpHeader(), nil
	}
	off := iter - 1
	if iter < 0 || off >= f.PayloadSize() {
		return 0, nil, nil
	}
	_, end, _ := f.PayloadSegment(off)
	chunk := make([]byte, min(end-off, maxDumpChunk))
	n, err := f.ReadPayloadAt(chunk, off)
	if n < len(chunk) {
		return 0, nil, err
	}
	return iter + int64(n), chunk, nil
}

func (m *memstore) LoadChunk(_ context.Context, key string, iter int64, chunk []byte) error {
	defer m.ks.lockKey(key).Unlock()
	e := m.ks.get(key)
	if iter == 1 && e == nil {
		f, err := m.loadHeader(chunk)
		if err != nil {
			return err
		}
		m.ks.set(key, m.adopt(f))
	} else {
		if e == nil {
			return errNotFound
		}
		off := iter - 1 - int64(len(chunk))
		if iter < 1 || off < 0 || off > e.filter.PayloadSize()-int64(len(chunk)) {
			return errBadChunk
		}
		m.ks.modify(key, e)
		if _, err := e.filter.WritePayloadAt(chunk, off); err != nil {
			return errBadChunk
		}
	}
	m.log([]byte("BF.LOADCHUNK"), []byte(key), fmtInt(iter), chunk)
	return nil
}

// loadHeader makes the empty filter a dump header describes, charging its
// bytes to the budget before they are allocated.
func (m *memstore) loadHeader(hdr []byte) (*bloom.Scalable, error) {
	limit := m.maxFilter
	if !m.limitless && m.maxMemory != 0 {
		limit = min(limit, m.maxMemory-min(m.used.Load(), m.maxMemory))
	}
	f, err := bloom.LoadScalableHeader(hdr, bloom.WithMaxBytes(limit))
	switch {
	case errors.Is(err, bloom.ErrTooLarge):
		return nil, errNoMemory
	case err != nil:
		return nil, errBadChunk
	}
	if err := m.reserve(f.Bytes()); err != nil {
		return nil, err
	}
	return f, nil
}
