package server

import (
	"fmt"
	"hash/crc32"

	"github.com/bloomery/bloom"
)

// Shapes (snapshot version 2). Most keys of a keyspace of small filters
// were made with the same parameters, and a small filter's encoding is
// mostly its headers: 352 bytes for the 152 bytes of bits of a default
// filter (capacity 100, p = 0.01), so a snapshot of them was 387 bytes a
// key (a key of 10 bytes). A snapshot now writes the headers of such
// filters once, as a shape (bloom.Shape), and each filter of one
// sub-filter as its shape's id and its state, the count and the bits:
// 191 bytes a key (docs/PERSISTENCE.md, "Snapshot format"; docs/BENCHMARKS.md,
// "Shapes in snapshots").
//
//	'S', u32 shape id (0, 1, … in the order written), u32 length
//	     (bloom.ShapeSize), the shape's encoding, u32 CRC-32C of the
//	     record from 'S' on
//	'B', u32 key length, key, i64 expiry, u32 shape id (written before),
//	     the state (its length the shape's), u32 CRC-32C of the record
//
// A snapshot holds at most maxSnapShapes shapes, and a state at most
// maxShapeState bytes: the loader keeps a buffer of the state's size for
// each shape, so a damaged file costs at most their product before it is
// refused. Past the shapes' limit a small filter is written whole.
//
// The automatic snapshots' rule (rewriteDue) weighs a snapshot as the
// bytes version 1 would have written for it, every state as the whole
// record it stands for: a snapshot's work is in its keys and filters,
// not in its file's bytes, and counting the smaller file would make the
// snapshots more frequent for the same writes (it did, in a trial of
// smaller records: docs/BENCHMARKS.md, "Zero-run coded small filters").

const (
	tagShape      = 'S'
	tagState      = 'B'
	maxSnapShapes = 256
	maxShapeState = 64 << 10
)

// snapShapes are the shapes a snapshot has written, by the writer.
type snapShapes struct {
	ids    map[bloom.Shape]uint32
	last   bloom.Shape // the last one looked up: most keys share one
	lastID uint32
	buf    []byte
}

// stateRecord writes f as a 'B' record, after its shape's 'S' record if
// the snapshot has not written it, and reports whether it did: not for
// a filter of more than one sub-filter, or of a new shape past the
// shapes' limit.
func (sw *snapWriter) stateRecord(key string, expireAt int64, f *bloom.Scalable) bool {
	b := appendKeyHead(sw.buf[:0], tagState, key, expireAt)
	idAt := len(b)
	b = append(b, 0, 0, 0, 0)
	sh, b, ok := f.AppendState(b)
	sw.buf = b
	if !ok || sh.StateSize() > maxShapeState {
		return false
	}
	id, ok := sw.shapeID(sh)
	if !ok {
		return false
	}
	le.PutUint32(b[idAt:], id)
	b = le.AppendUint32(b, crc32.Checksum(b, castagnoli))
	sw.buf = b
	sw.put(b)
	sw.unshaped += recordSize(len(key), sh.EncodedSize()) - int64(len(b))
	return true
}

// recordSize is the length of a 'K' record of a key of klen bytes and a
// filter encoding of size bytes.
func recordSize(klen int, size int64) int64 { return 1 + 4 + int64(klen) + 8 + 8 + size + 4 }

// shapeID returns sh's id, first writing its 'S' record if it is new;
// false past maxSnapShapes.
func (sw *snapWriter) shapeID(sh bloom.Shape) (uint32, bool) {
	ss := &sw.shapes
	if ss.ids != nil && sh == ss.last {
		return ss.lastID, true
	}
	id, ok := ss.ids[sh]
	if !ok {
		if len(ss.ids) >= maxSnapShapes {
			return 0, false
		}
		id = uint32(len(ss.ids))
		b := append(ss.buf[:0], tagShape)
		b = le.AppendUint32(b, id)
		b = le.AppendUint32(b, bloom.ShapeSize)
		b, err := sh.AppendBinary(b)
		if err != nil {
			if sw.err == nil {
				sw.err = err
			}
			return 0, false
		}
		b = le.AppendUint32(b, crc32.Checksum(b, castagnoli))
		ss.buf = b
		sw.put(b)
		sw.unshaped -= int64(len(b))
		if ss.ids == nil {
			ss.ids = make(map[bloom.Shape]uint32)
		}
		ss.ids[sh] = id
	}
	ss.last, ss.lastID = sh, id
	return id, true
}

// readShape reads an 'S' record after its tag and makes its loader.
func (ld *snapLoad) readShape() error {
	sr := ld.sr
	start := sr.off - 1 // its tag
	id, err := sr.u32()
	if err != nil {
		return err
	}
	switch {
	case int(id) != len(ld.shapes):
		return fmt.Errorf("shape %d where shape %d comes next", id, len(ld.shapes))
	case id >= maxSnapShapes:
		return fmt.Errorf("more than %d shapes", maxSnapShapes)
	}
	n, err := sr.u32()
	if err != nil {
		return err
	}
	if n != bloom.ShapeSize {
		return fmt.Errorf("shape %d: %d bytes, not %d", id, n, bloom.ShapeSize)
	}
	enc, err := sr.bytes(uint64(n))
	if err != nil {
		return fmt.Errorf("shape %d: %w", id, err)
	}
	if err := sr.recordCRC(); err != nil {
		return fmt.Errorf("shape %d: %w", id, err)
	}
	sl, err := bloom.NewStateLoader(enc, bloom.WithMaxBytes(maxShapeState-8))
	if err != nil {
		return fmt.Errorf("shape %d: %w", id, err)
	}
	if bits := uint64(sl.StateSize() - 8); bits > ld.l.maxFilterBytes() {
		return fmt.Errorf("%w (shape %d: filters of %d bytes, above the limit of %d)", errNoMemory, id, bits, ld.l.maxFilterBytes())
	}
	ld.shapes = append(ld.shapes, sl)
	ld.unshaped -= sr.off - start
	return nil
}

// readState reads a 'B' record after its tag and restores its key.
func (ld *snapLoad) readState() error {
	sr := ld.sr
	start := sr.off - 1 // its tag
	key, at, err := sr.keyHead()
	if err != nil {
		return err
	}
	id, err := sr.u32()
	if err != nil {
		return err
	}
	if int(id) >= len(ld.shapes) {
		return fmt.Errorf("key %q: shape %d, of %d written before it", key, id, len(ld.shapes))
	}
	sl := ld.shapes[id]
	if ld.state, err = sr.into(ld.state, sl.StateSize()); err != nil {
		return fmt.Errorf("key %q: %w", key, err)
	}
	if err := sr.recordCRC(); err != nil {
		return fmt.Errorf("the record of key %q: %w", key, err)
	}
	if err := ld.l.restoreState(key, sl, ld.state, at); err != nil {
		return fmt.Errorf("key %q: a filter of %d bytes: %w", key, sl.Sizing().Bytes(), err)
	}
	ld.unshaped += recordSize(len(key), sl.EncodedSize()) - (sr.off - start)
	return nil
}
