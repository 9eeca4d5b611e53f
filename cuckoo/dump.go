package cuckoo

import (
	"encoding/binary"
	"fmt"
)

// RedisBloom's dump of a cuckoo filter (CF.SCANDUMP, CF.LOADCHUNK;
// docs/CUCKOO.md §6–7): a 38-byte header, then the sub-filters' bucket
// bytes in order, each sub-filter whole when it has at most MaxChunkBytes
// bytes, else in pieces of MaxChunkBytes. Chunk iterators count bytes: a
// chunk's iterator is 1 + the bytes of all chunks up to and including it.

const (
	// DumpHeaderSize is the length of the dump header.
	DumpHeaderSize = 38
	// MaxChunkBytes is the most bytes of one dump chunk (RedisBloom's
	// MAX_SCANDUMP_SIZE).
	MaxChunkBytes = 16 << 20
)

// DumpHeader is the dump's header, CF.SCANDUMP's first chunk: packed
// little-endian u64 items, buckets (of sub-filter 0), deletes, filters,
// then u16 bucket size, max iterations and expansion.
func (f *Filter) DumpHeader() []byte { return f.Info().DumpHeader() }

// ScanDump answers CF.SCANDUMP with iterator it ≥ 0: (0, nil) when the
// filter holds no items (RedisBloom dumps nothing then, not even the
// header), (1, DumpHeader()) for it = 0, else DumpChunk(it). The data
// of a chunk is the filter's own memory: it is valid until the filter
// next changes, and must not be written.
func (f *Filter) ScanDump(it int64) (next int64, data []byte) {
	switch {
	case f.items == 0 || it < 0:
		return 0, nil
	case it == 0:
		return 1, f.DumpHeader()
	}
	return f.DumpChunk(it)
}

// DumpChunk is the data chunk at iterator it ≥ 1 and the iterator of the
// next, or (0, nil) past the last chunk, as RedisBloom computes them:
// offset it − 1 falls in some sub-filter; a sub-filter of at most
// MaxChunkBytes comes whole from its first byte (whatever the offset in
// it), a larger one from the offset, MaxChunkBytes at most. Unlike
// ScanDump it dumps an empty filter too (RedisBloom's AOF rewrite does).
// The data is the filter's own memory, as for ScanDump.
func (f *Filter) DumpChunk(it int64) (next int64, data []byte) {
	if it < 1 {
		return 0, nil
	}
	off := uint64(it - 1)
	for i := range f.subs {
		d := f.subs[i].data
		size := uint64(len(d))
		if off >= size {
			off -= size
			continue
		}
		if size <= MaxChunkBytes {
			return it + int64(size), d[:size:size]
		}
		n := min(size-off, MaxChunkBytes)
		return it + int64(n), d[off : off+n : off+n]
	}
	return 0, nil
}

// LoadDumpHeader makes a filter from a dump header (CF.LOADCHUNK at
// iterator 1), with the header's counters and all sub-filters empty; the
// data chunks then go in with LoadChunk. It checks what RedisBloom 8
// checks (bucket size 1 to 255, buckets a power of two up to MaxBuckets,
// at least one sub-filter, max iterations at least 1, expansion at most
// MaxExpansion, and one sub-filter only with expansion 0), and that the
// sub-filters fit the limits, before it allocates. As RedisBloom does,
// it takes the expansion as stored (not rounded) and the sub-filter
// count modulo 65536. Errors: ErrFormat (RedisBloom's "Invalid header"
// for a length other than DumpHeaderSize, else "Couldn't create
// filter!"), ErrTooLarge. WithMaxBytes applies.
func LoadDumpHeader(hdr []byte, opts ...Option) (*Filter, error) {
	if _, err := ParseDumpHeader(hdr, opts...); err != nil {
		return nil, err
	}
	h := parseDumpHeader(hdr)
	h.filters &= 0xffff // RedisBloom keeps it in a u16
	return h.filter(newConfig(opts).maxBytes)
}

// dumpHeader is a decoded dump header.
type dumpHeader struct {
	items, buckets, deletes, filters     uint64
	bucketSize, maxIterations, expansion uint64
}

func parseDumpHeader(b []byte) dumpHeader {
	le := binary.LittleEndian
	return dumpHeader{
		items: le.Uint64(b[0:]), buckets: le.Uint64(b[8:]), deletes: le.Uint64(b[16:]), filters: le.Uint64(b[24:]),
		bucketSize: uint64(le.Uint16(b[32:])), maxIterations: uint64(le.Uint16(b[34:])), expansion: uint64(le.Uint16(b[36:])),
	}
}

// check is RedisBloom 8's CuckooFilter_ValidateIntegrity.
func (h dumpHeader) check() error {
	var what string
	switch {
	case h.bucketSize < 1 || h.bucketSize > MaxBucketSize:
		what = fmt.Sprintf("bucket size %d", h.bucketSize)
	case h.filters < 1 || h.filters > MaxFilters:
		what = fmt.Sprintf("%d sub-filters", h.filters)
	case h.maxIterations < 1:
		what = "max iterations 0"
	case h.expansion > MaxExpansion:
		what = fmt.Sprintf("expansion %d", h.expansion)
	case h.expansion == 0 && h.filters > 1:
		what = fmt.Sprintf("%d sub-filters with expansion 0", h.filters)
	case h.buckets < 1 || h.buckets > MaxBuckets || h.buckets&(h.buckets-1) != 0:
		what = fmt.Sprintf("%d buckets (want a power of two up to 2^56)", h.buckets)
	default:
		return nil
	}
	return fmt.Errorf("%w: dump header with %s", ErrFormat, what)
}

// filter allocates the empty filter h describes.
func (h dumpHeader) filter(maxBytes uint64) (*Filter, error) {
	f, err := newFilter(h.buckets, h.bucketSize, h.maxIterations, h.expansion, int(h.filters), maxBytes)
	if err != nil {
		return nil, err
	}
	f.items, f.deletes = h.items, h.deletes
	return f, nil
}

// LoadChunk writes a dump chunk at iterator it, as CF.LOADCHUNK does for
// iterators other than 1: the chunk's bytes end at offset it − 1 of the
// sub-filters' bytes and must lie inside one sub-filter (any range of
// one, aligned or not). As in RedisBloom, a range past the last
// sub-filter wraps into the last one (offset − the bytes before it).
// The counters do not change. ErrChunk (RedisBloom's "Couldn't load
// chunk!") for an empty chunk, it < 1, or a chunk that does not fit;
// the filter is unchanged then.
func (f *Filter) LoadChunk(it int64, data []byte) error {
	n := uint64(len(data))
	if n == 0 || it <= 0 || uint64(it-1) < n {
		return fmt.Errorf("%w: %d bytes at iterator %d", ErrChunk, n, it)
	}
	off := uint64(it) - n - 1
	var s *subFilter
	for i := range f.subs {
		s = &f.subs[i]
		if off < uint64(len(s.data)) {
			break
		}
		off -= uint64(len(s.data))
	}
	if s == nil || off > uint64(len(s.data)) || n > uint64(len(s.data))-off {
		return fmt.Errorf("%w: %d bytes at iterator %d cross a sub-filter's end", ErrChunk, n, it)
	}
	if f.view != nil {
		defer f.lockView().unlock()
	}
	f.saving(s, off, n)
	copy(s.data[off:], data)
	return nil
}
