package server

import (
	"cmp"
	"context"
	"errors"

	"github.com/bloomery/bloom"
)

// BF.SCANDUMP and BF.LOADCHUNK on the memory backend.
//
// The chunks and their iterators are bloom.Scalable's DumpChunk and
// LoadChunk (RedisBloom's arithmetic, shared with the CLI's push and
// pull): a header at iterator 0, then the sub-filters' bit arrays in
// chunks of at most 16 MiB that never cross a sub-filter. The header is
// RedisBloom's own for a filter in RedisBloom's layout (so RedisBloom
// loads the dump), Bloomery's (bloom.Scalable.DumpHeader: the kind-2 file
// header, its parameters and every sub-filter's header, all with CRCs)
// for the others. LOADCHUNK key 1 <header> makes the filter from either
// (zero bits, the recorded counts; a RedisBloom header makes it in
// RedisBloom's layout), LOADCHUNK key it <chunk> writes the chunk ending
// at it-1.

func (m *memstore) ScanDump(_ context.Context, key string, iter int64) (int64, []byte, error) {
	defer m.ks.lockKey(key).Unlock()
	e, err := m.bloomOf(key)
	if e == nil {
		return 0, nil, cmp.Or(err, error(errNotFound))
	}
	return e.filter.DumpChunk(iter)
}

func (m *memstore) LoadChunk(_ context.Context, key string, iter int64, chunk []byte) error {
	defer m.ks.lockKey(key).Unlock()
	e, err := m.bloomOf(key)
	if err != nil {
		return err
	}
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
		if err := checkChunk(e.filter, iter, len(chunk)); err != nil {
			return err
		}
		m.ks.modify(key, e)
		if err := e.filter.LoadChunk(iter, chunk); err != nil {
			return errBadChunk
		}
	}
	m.log([]byte("BF.LOADCHUNK"), []byte(key), fmtInt(iter), chunk)
	return nil
}

// loadHeader makes the empty filter a dump header describes, charging its
// bytes to the budget before they are allocated.
func (m *memstore) loadHeader(hdr []byte) (*bloom.Scalable, error) {
	f, err := bloom.LoadDumpHeader(hdr, bloom.WithMaxBytes(m.filterRoom()))
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

// filterRoom is the most bytes a filter loaded from a dump header may
// take: the per-filter limit, or what is left of the budget if less.
func (m *memstore) filterRoom() uint64 {
	limit := m.maxFilter
	if m.maxMemory != 0 {
		limit = min(limit, m.maxMemory-min(m.used.Load(), m.maxMemory))
	}
	return limit
}

// checkChunk checks a chunk of n bytes at iter for f as RedisBloom's
// BF.LOADCHUNK does, with its replies: an iterator of at least 1 and n
// (else errBadChunk), a sub-filter holding the chunk's first byte (else
// errNoLink) and room for the chunk there (else errChunkTooBig). A
// zero-length chunk at a byte of the payload is fine.
func checkChunk(f *bloom.Scalable, iter int64, n int) error {
	if iter <= 0 || iter < int64(n) {
		return errBadChunk
	}
	start := iter - int64(n) - 1
	if start < 0 {
		return errNoLink
	}
	_, end, ok := f.PayloadSegment(start)
	switch {
	case !ok:
		return errNoLink
	case int64(n) > end-start:
		return errChunkTooBig
	}
	return nil
}
