package bloom

import "fmt"

// A dump in numbered chunks, as RedisBloom's BF.SCANDUMP and
// BF.LOADCHUNK number them, so that every store that moves a Scalable
// filter in bounded pieces (the server, the CLI's push and pull) does the
// same arithmetic: iterator 0 is the header (DumpHeader) and comes back
// with iterator 1; iterator it ≥ 1 is the payload from offset it−1, at
// most MaxDumpChunk bytes that never cross from one sub-filter into the
// next, and comes back with it + its length, the iterator LoadChunk takes
// it at; past the end comes back 0.

// MaxDumpChunk is the most payload bytes one chunk holds: RedisBloom's
// MAX_SCANDUMP_SIZE.
const MaxDumpChunk = 16 << 20

// DumpChunk returns the chunk of s's dump at iterator it and the iterator
// that comes with it (see above): the header for 0, payload otherwise,
// and (0, nil) past the end or for a negative iterator. The header is
// RedisBloom's (RedisBloomHeader) for a filter in the RedisBloom layout,
// so that RedisBloom can BF.LOADCHUNK the dump, and Bloomery's own
// (DumpHeader) for the other layouts; LoadDumpHeader reads either. Each
// chunk is one consistent state; a dump taken while Adds go on may mix
// states.
func (s *Scalable) DumpChunk(it int64) (next int64, chunk []byte, err error) {
	if it == 0 {
		if s.Layout() == RedisBloom {
			chunk, err = s.RedisBloomHeader()
			return 1, chunk, err
		}
		return 1, s.DumpHeader(), nil
	}
	off := it - 1
	if it < 0 || off >= s.PayloadSize() {
		return 0, nil, nil
	}
	_, end, _ := s.PayloadSegment(off)
	chunk = make([]byte, min(end-off, MaxDumpChunk))
	n, err := s.ReadPayloadAt(chunk, off)
	if n < len(chunk) {
		return 0, nil, fmt.Errorf("bloom: dump chunk at %d: %w", it, err)
	}
	return it + int64(n), chunk, nil
}

// LoadChunk writes a payload chunk of a dump at the iterator it came back
// with from DumpChunk (or BF.SCANDUMP): bytes [it−1−len, it−1) of the
// payload. The range must lie inside one sub-filter, as every chunk
// DumpChunk makes does; otherwise it writes nothing and the error wraps
// ErrInvalidSize. Load into a filter nobody else uses yet
// (WritePayloadAt says why).
func (s *Scalable) LoadChunk(it int64, chunk []byte) error {
	off := it - 1 - int64(len(chunk))
	if it < 1 || off < 0 {
		return fmt.Errorf("%w: a chunk of %d bytes at iterator %d", ErrInvalidSize, len(chunk), it)
	}
	if len(chunk) > 0 {
		start, end, ok := s.PayloadSegment(off)
		if !ok || off+int64(len(chunk)) > end || off < start {
			return fmt.Errorf("%w: a chunk of %d bytes at iterator %d does not lie inside one sub-filter", ErrInvalidSize, len(chunk), it)
		}
	}
	_, err := s.WritePayloadAt(chunk, off)
	return err
}
