package server

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"slices"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/cuckoo"
)

// snapReader reads a snapshot, keeping its offset and the CRCs of the
// file and of the current record. Reads stop at end: the file's size, or
// the end of a filter's encoding while one is decoded; Len is what is
// left before it, so bloom.LoadScalable checks sizes against the bytes
// that are really there before allocating.
type snapReader struct {
	r        *bufio.Reader
	off, end int64
	all, rec uint32
	num      [8]byte // u32's and u64's
}

func (sr *snapReader) Read(b []byte) (int, error) {
	left := sr.end - sr.off
	if left <= 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > left {
		b = b[:left]
	}
	n, err := sr.r.Read(b)
	sr.all = crc32.Update(sr.all, castagnoli, b[:n])
	sr.rec = crc32.Update(sr.rec, castagnoli, b[:n])
	sr.off += int64(n)
	return n, err
}

func (sr *snapReader) Len() int { return int(sr.end - sr.off) }

// bytes reads n bytes, n checked against what is left first.
func (sr *snapReader) bytes(n uint64) ([]byte, error) {
	if n > uint64(sr.Len()) {
		return nil, fmt.Errorf("%d bytes announced, %d left in the file", n, sr.Len())
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(sr, b); err != nil {
		return nil, err
	}
	return b, nil
}

// into reads n bytes into buf (grown if need be), n checked against
// what is left first.
func (sr *snapReader) into(buf []byte, n int) ([]byte, error) {
	if n > sr.Len() {
		return buf, fmt.Errorf("%d bytes announced, %d left in the file", n, sr.Len())
	}
	buf = slices.Grow(buf[:0], n)[:n]
	_, err := io.ReadFull(sr, buf)
	return buf, err
}

func (sr *snapReader) u32() (uint32, error) {
	b, err := sr.into(sr.num[:0], 4)
	if err != nil {
		return 0, err
	}
	return le.Uint32(b), nil
}

func (sr *snapReader) u64() (uint64, error) {
	b, err := sr.into(sr.num[:0], 8)
	if err != nil {
		return 0, err
	}
	return le.Uint64(b), nil
}

// snapLoaded is what loading a snapshot found: its keys, its size, and
// its weight for the automatic snapshots' rule (snapshot_shapes.go).
type snapLoaded struct{ keys, size, weight int64 }

// loadSnapshot restores snapshot gen's keys through l. Any defect is an
// error naming the file and the offset of the record (or header, or
// trailer) at fault.
func (p *persistence) loadSnapshot(gen uint64, l loader) (snapLoaded, error) {
	name := filepath.Join(p.dir, snapshotName(gen))
	f, size, err := openSized(name)
	if err != nil {
		return snapLoaded{}, err
	}
	defer f.Close()
	ld := &snapLoad{sr: &snapReader{r: bufio.NewReaderSize(f, 1<<20), end: size}, l: l}
	off, err := ld.read(gen)
	if errors.Is(err, errNoMemory) { // the limits, not the file: no repair (server.limitsHint says what to do)
		return snapLoaded{keys: ld.keys}, fmt.Errorf("server: %s: offset %d: %w", name, off, err)
	}
	if err != nil {
		return snapLoaded{keys: ld.keys}, fmt.Errorf("server: %s: offset %d: %w; the snapshot cannot be loaded: restore the directory from a backup "+
			"(moving the file away loses the keys it holds)", name, off, err)
	}
	return snapLoaded{keys: ld.keys, size: size, weight: size + ld.unshaped}, nil
}

// snapLoad is a snapshot being read.
type snapLoad struct {
	sr       *snapReader
	l        loader
	keys     int64
	shapes   []*bloom.StateLoader // by id (snapshot_shapes.go)
	state    []byte               // a 'B' record's state
	unshaped int64                // as snapWriter.unshaped
}

// read reads the snapshot; on error it also returns the offset of the
// part at fault.
func (ld *snapLoad) read(gen uint64) (off int64, err error) {
	sr := ld.sr
	hdr, err := sr.bytes(snapHeaderLen)
	if err != nil {
		return 0, fmt.Errorf("header: %w", err)
	}
	version := le.Uint32(hdr[8:])
	switch {
	case string(hdr[:8]) != snapMagic:
		return 0, fmt.Errorf("not a bloomery snapshot (magic %q)", hdr[:8])
	case version < 1 || version > snapVersion || le.Uint32(hdr[12:]) != 0:
		return 0, fmt.Errorf("unsupported snapshot version %d, flags %#x", version, le.Uint32(hdr[12:]))
	case le.Uint64(hdr[16:]) != gen:
		return 0, fmt.Errorf("the header says generation %d, the name %d", le.Uint64(hdr[16:]), gen)
	}
	for {
		off = sr.off
		sr.rec = 0
		tag, err := sr.into(sr.num[:0], 1)
		if err != nil {
			return off, errors.New("the file ends before its trailer")
		}
		switch t := tag[0]; {
		case t == tagEnd:
			return off, sr.trailer(ld.keys)
		case t == tagKey || t == tagCuckoo:
			err = readRecord(sr, ld.l, t)
		case t == tagShape && version >= 2:
			if err = ld.readShape(); err == nil {
				continue
			}
		case t == tagState && version >= 2:
			err = ld.readState()
		default:
			return off, fmt.Errorf("unknown record tag %#x in a version-%d snapshot", t, version)
		}
		if err != nil {
			return off, err
		}
		ld.keys++
	}
}

// trailer checks the trailer after its tag.
func (sr *snapReader) trailer(keys int64) error {
	count, err := sr.u64()
	if err != nil {
		return fmt.Errorf("trailer: %w", err)
	}
	if err := sr.checkCRC(sr.all, "the file"); err != nil {
		return fmt.Errorf("trailer: %w", err)
	}
	switch {
	case count != uint64(keys):
		return fmt.Errorf("the trailer counts %d keys, the file holds %d", count, keys)
	case sr.Len() != 0:
		return fmt.Errorf("%d bytes after the trailer", sr.Len())
	}
	return nil
}

// keyHead reads the key and expiry that follow a key record's tag.
func (sr *snapReader) keyHead() (key []byte, expireAt int64, err error) {
	klen, err := sr.u32()
	if err != nil {
		return nil, 0, err
	}
	if key, err = sr.bytes(uint64(klen)); err != nil {
		return nil, 0, fmt.Errorf("key: %w", err)
	}
	at, err := sr.u64()
	if err != nil {
		return nil, 0, err
	}
	if int64(at) < 0 {
		return nil, 0, fmt.Errorf("key %q: expiry %d", key, int64(at))
	}
	return key, int64(at), nil
}

// recordCRC reads a record's CRC and checks it against the bytes read
// since its tag. The caller names the record in the error: only then,
// since a name made for every record cost two allocations a key.
func (sr *snapReader) recordCRC() error { return sr.checkCRC(sr.rec, "the record") }

// checkCRC reads a stored CRC-32C and checks it against want, that of
// the bytes it covers, which of names.
func (sr *snapReader) checkCRC(want uint32, of string) error {
	got, err := sr.u32()
	switch {
	case err != nil:
		return fmt.Errorf("checksum of %s: %w", of, err)
	case got != want:
		return fmt.Errorf("checksum mismatch over %s (it says %08x, its bytes give %08x)", of, got, want)
	}
	return nil
}

// readRecord reads one key's record after its tag (tagKey: a Bloom
// filter, tagCuckoo: a cuckoo filter) and restores the key. A filter
// beyond the per-filter limit is refused before it is allocated.
func readRecord(sr *snapReader, l loader, tag byte) error {
	key, at, err := sr.keyHead()
	if err != nil {
		return err
	}
	flen, err := sr.u64()
	if err != nil {
		return err
	}
	if flen > uint64(sr.Len()) {
		return fmt.Errorf("key %q: a filter of %d bytes announced, %d left in the file", key, flen, sr.Len())
	}
	fileEnd := sr.end
	sr.end = sr.off + int64(flen)
	v, derr := decodeValue(sr, tag, l.maxFilterBytes())
	if derr == nil && sr.Len() != 0 {
		derr = fmt.Errorf("%d bytes after the filter's encoding", sr.Len())
	}
	if _, err := io.Copy(io.Discard, sr); err != nil {
		return err
	}
	sr.end = fileEnd
	if err := sr.recordCRC(); err != nil {
		return fmt.Errorf("the record of key %q: %w", key, err)
	}
	if derr != nil {
		return fmt.Errorf("key %q: %w", key, derr)
	}
	if err := l.restore(string(key), v, at); err != nil {
		return fmt.Errorf("key %q: a filter of %d bytes: %w", key, v.bytes(), err)
	}
	return nil
}

// snapValue is a filter read from a snapshot: a Bloom filter or a
// cuckoo filter.
type snapValue struct {
	bf *bloom.Scalable
	cf *cuckoo.Filter
}

func (v snapValue) bytes() uint64 {
	if v.cf != nil {
		return v.cf.Bytes()
	}
	return v.bf.Bytes()
}

// decodeValue decodes a record's filter, of the kind its tag says, and
// no larger than maxBytes (else errNoMemory, before allocating).
func decodeValue(sr *snapReader, tag byte, maxBytes uint64) (snapValue, error) {
	var v snapValue
	var err error
	if tag == tagCuckoo {
		v.cf, err = cuckoo.Load(sr, cuckoo.WithMaxBytes(maxBytes))
	} else {
		v.bf, err = bloom.LoadScalable(sr, bloom.WithMaxBytes(maxBytes))
	}
	if errors.Is(err, bloom.ErrTooLarge) || errors.Is(err, cuckoo.ErrTooLarge) {
		err = fmt.Errorf("%w (%v)", errNoMemory, err)
	}
	return v, err
}
