package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"unsafe"
)

// OpenFile and MappedFilter: a kind-1 file used in place, without reading
// its bit array into memory. The header and trailer keep the payload at
// offset 64 of the file, so in a mapping (page-aligned) it is 64-byte
// aligned and, on little-endian hosts, already the filter's []uint64.

// MappedFilter is a read-only Filter opened from a file by OpenFile: Test,
// TestMany and the statistics work as on a Filter loaded from the same
// file, with the same answers. There is no Add: on Unix the bit array is
// the file itself, mapped with PROT_READ, so a write would fault; the type
// offers no method that writes. Load the file for a filter you can change.
//
// On little-endian Unix hosts (amd64, arm64, …) the file is memory-mapped:
// opening takes no memory for the bit array, and pages are read from the
// page cache as lookups touch them. Elsewhere (big-endian hosts, other
// systems, a file that is not a regular file such as a pipe), OpenFile
// reads the filter into memory as Load does.
//
// Concurrency: the read methods may be called from many goroutines at
// once; Close must not run concurrently with them.
//
// A mapped file must not be truncated while open: reading a page that no
// longer exists raises SIGBUS, which kills the process unless the read
// runs inside Guard, which turns it into an error wrapping
// ErrFileChanged. Rewriting the file in place changes the answers;
// replace it by renaming a new file over it instead, which leaves the
// mapping on the old one.
type MappedFilter struct {
	f       *Filter // its words are the mapping's payload when data != nil
	data    []byte  // the whole mapping; nil when read or closed
	cleanup runtime.Cleanup
}

// OpenFile opens the kind-1 filter file at path read-only (see
// MappedFilter), opening and reading it once, after checking its header
// as Load does, its size against the header, and the CRC of its bit
// array. Errors wrap ErrFormat (not a filter file, another kind as a
// *KindError, truncated, or bytes after the filter), ErrChecksum,
// ErrKeyRequired, ErrWrongKey or ErrFileChanged (truncated while the CRC
// was read), or are the *os.PathError of opening path. Options: WithKey
// to open a keyed filter; WithMaxBytes limits only a filter that has to
// be read into memory (a mapping allocates nothing); WithLayout and
// WithConcurrent are ignored. OpenAny opens a file of any kind.
//
// The returned filter's methods read the mapping: if the file may be
// truncated while they run (by another process), run them inside
// MappedFilter.Guard, or a lookup may kill the process with SIGBUS.
func OpenFile(path string, opts ...Option) (*MappedFilter, error) {
	return withFile(path, func(file *os.File) (*MappedFilter, error) { return openFile(file, newConfig(opts)) })
}

// withFile opens path, calls open with it and closes it; open's errors
// name path. (A mapping outlives the file descriptor it was made from.)
func withFile[T any](path string, open func(*os.File) (T, error)) (T, error) {
	var zero T
	file, err := os.Open(path)
	if err != nil {
		return zero, err
	}
	defer file.Close()
	v, err := open(file)
	if err != nil {
		return zero, fmt.Errorf("open %s: %w", path, err)
	}
	return v, nil
}

// openFile checks file and maps it, or reads it when it cannot be mapped.
func openFile(file *os.File, c config) (*MappedFilter, error) {
	c.concurrent = false // nothing writes, so reads need no atomics
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return readFile(file, c, true)
	}
	h, _, err := readHeader(file, kindFilter)
	if err != nil {
		return nil, err
	}
	s, err := headerSizing(h, false)
	if err != nil {
		return nil, err
	}
	if err := checkHash(h, c); err != nil {
		return nil, err
	}
	want := uint64(headerSize) + s.Bytes() + trailerSize
	switch size := uint64(st.Size()); {
	case size < want:
		return nil, fmt.Errorf("%w: truncated: the header needs %d bytes, the file has %d", ErrFormat, want, size)
	case size > want:
		return nil, fmt.Errorf("%w: %d bytes after the filter", ErrFormat, size-want)
	case !littleEndian || want > uint64(maxInt):
		return readAgain(file, c)
	}
	data, err := mmap(file, int(want))
	if errors.Is(err, errNoMmap) {
		return readAgain(file, c)
	}
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	var f *Filter
	if gerr := guard(data, func() { f, err = mappedFilter(data, s, h, c) }); gerr != nil {
		err = gerr
	}
	if err != nil {
		_ = munmap(data)
		return nil, err
	}
	m := &MappedFilter{f: f, data: data}
	m.cleanup = runtime.AddCleanup(m, func(b []byte) { _ = munmap(b) }, data)
	return m, nil
}

const maxInt = int(^uint(0) >> 1)

// errNoMmap is mmap's error on systems without it; OpenFile then reads the
// file.
var errNoMmap = errors.New("bloom: memory mapping not supported")

// readAgain reads the filter in the regular file file from its start,
// for hosts that cannot use a mapping (its size was checked).
func readAgain(file *os.File, c config) (*MappedFilter, error) {
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return readFile(file, c, false)
}

// readFile reads the filter in file into memory, then, if wantEOF, checks
// that nothing follows it.
func readFile(file *os.File, c config, wantEOF bool) (*MappedFilter, error) {
	f, _, err := decode(file, c)
	if err == nil && wantEOF {
		err = checkEOF(file)
	}
	if err != nil {
		return nil, err
	}
	return &MappedFilter{f: f}, nil
}

// mappedFilter checks the trailer (and the payload CRC unless skipped) of
// the mapped encoding data, whose header h and geometry s were checked,
// and returns the filter whose words are its payload.
func mappedFilter(data []byte, s Sizing, h header, c config) (*Filter, error) {
	payload := data[headerSize : uint64(headerSize)+s.Bytes()]
	trailer := data[len(data)-trailerSize:]
	if !c.skipCRC {
		if got, stored := crc32.Checksum(payload, castagnoli), binary.LittleEndian.Uint32(trailer); got != stored {
			return nil, fmt.Errorf("%w: payload CRC %08x, stored %08x", ErrChecksum, got, stored)
		}
	}
	if binary.LittleEndian.Uint32(trailer[4:]) != 0 {
		return nil, fmt.Errorf("%w: reserved trailer bytes are set", ErrFormat)
	}
	// The mapping is page-aligned, so the payload at offset 64 is 64-byte
	// aligned, as alignedWords makes a heap bit array.
	words := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(payload))), len(payload)/8)
	f := new(Filter)
	f.setup(s, c, words) // c is not concurrent: nothing writes
	f.setInserted(h.count)
	return f, nil
}

// Close releases the mapping (or the filter read into memory). The
// filter must not be used after Close; calling Close again does nothing.
func (m *MappedFilter) Close() error {
	if m.f == nil {
		return nil
	}
	m.f = nil
	if m.data == nil {
		return nil
	}
	m.cleanup.Stop()
	data := m.data
	m.data = nil
	return munmap(data)
}

// Mapped reports whether the bit array is a memory mapping of the file,
// rather than a copy read into memory.
func (m *MappedFilter) Mapped() bool { return m.data != nil }

// Test is Filter.Test.
func (m *MappedFilter) Test(item []byte) bool { return m.f.Test(item) }

// TestString is Filter.TestString.
func (m *MappedFilter) TestString(s string) bool { return m.f.TestString(s) }

// TestHash is Filter.TestHash.
func (m *MappedFilter) TestHash(h Hash) bool { return m.f.TestHash(h) }

// TestMany is Filter.TestMany: the faster way to test many items in a
// filter larger than the CPU caches.
func (m *MappedFilter) TestMany(items [][]byte, dst []bool) []bool { return m.f.TestMany(items, dst) }

// TestHashes is Filter.TestHashes.
func (m *MappedFilter) TestHashes(hs []Hash, dst []bool) { m.f.TestHashes(hs, dst) }

// Hash is Filter.Hash.
func (m *MappedFilter) Hash(item []byte) Hash { return m.f.Hash(item) }

// Cap is Filter.Cap.
func (m *MappedFilter) Cap() uint64 { return m.f.Cap() }

// TargetFPR is Filter.TargetFPR.
func (m *MappedFilter) TargetFPR() float64 { return m.f.TargetFPR() }

// Bits is Filter.Bits.
func (m *MappedFilter) Bits() uint64 { return m.f.Bits() }

// K is Filter.K.
func (m *MappedFilter) K() uint32 { return m.f.K() }

// Bytes is Filter.Bytes.
func (m *MappedFilter) Bytes() uint64 { return m.f.Bytes() }

// Layout is Filter.Layout.
func (m *MappedFilter) Layout() Layout { return m.f.Layout() }

// HashID is Filter.HashID.
func (m *MappedFilter) HashID() HashID { return m.f.HashID() }

// Keyed is Filter.Keyed.
func (m *MappedFilter) Keyed() bool { return m.f.Keyed() }

// Sizing is Filter.Sizing.
func (m *MappedFilter) Sizing() Sizing { return m.f.Sizing() }

// Inserted is the item count stored in the file (Filter.Inserted when it
// was written).
func (m *MappedFilter) Inserted() uint64 { return m.f.Inserted() }

// FillRatio is Filter.FillRatio; it reads the whole bit array.
func (m *MappedFilter) FillRatio() float64 { return m.f.FillRatio() }

// Count is Filter.Count; it reads the whole bit array.
func (m *MappedFilter) Count() uint64 { return m.f.Count() }

// EstimatedFPR is Filter.EstimatedFPR; it reads the whole bit array.
func (m *MappedFilter) EstimatedFPR() float64 { return m.f.EstimatedFPR() }

// EncodedSize is Filter.EncodedSize: the size of the file.
func (m *MappedFilter) EncodedSize() int64 { return m.f.EncodedSize() }

// WriteTo writes the filter's encoding to w (io.WriterTo), the same bytes
// as the file.
func (m *MappedFilter) WriteTo(w io.Writer) (int64, error) { return m.f.WriteTo(w) }

// ReadAt is Filter.ReadAt: bytes of the bit array (io.ReaderAt).
func (m *MappedFilter) ReadAt(p []byte, off int64) (int, error) { return m.f.ReadAt(p, off) }
