package cuckoo

import (
	"encoding/binary"
	"fmt"
)

// A filter's shape without its buckets, for stores that keep the buckets
// elsewhere (redisfilter keeps them in Redis strings): Plan and
// ParseDumpHeader check what New and LoadDumpHeader check and describe
// the filter as its Info would, without allocating it.

// Plan checks New's arguments and returns the Info of the empty filter
// New would make of them, without allocating it. Errors as New.
func Plan(capacity uint64, opts ...Option) (Info, error) {
	c := newConfig(opts)
	h, err := c.header(capacity)
	if err != nil {
		return Info{}, err
	}
	return h.info(c.maxBytes)
}

// ParseDumpHeader checks a dump header as LoadDumpHeader does and returns
// the Info of the filter it describes, without allocating it. Errors as
// LoadDumpHeader; WithMaxBytes applies.
func ParseDumpHeader(hdr []byte, opts ...Option) (Info, error) {
	if len(hdr) != DumpHeaderSize {
		return Info{}, fmt.Errorf("%w: dump header of %d bytes, want %d", ErrFormat, len(hdr), DumpHeaderSize)
	}
	h := parseDumpHeader(hdr)
	h.filters &= 0xffff // RedisBloom keeps it in a u16
	if err := h.check(); err != nil {
		return Info{}, err
	}
	return h.info(newConfig(opts).maxBytes)
}

// info is the Info of the filter h describes, or ErrTooLarge when its
// sub-filters would pass the limits.
func (h dumpHeader) info(maxBytes uint64) (Info, error) {
	total, err := subBytes(h.buckets, h.expansion, int(h.filters), h.bucketSize)
	if err != nil {
		return Info{}, err
	}
	if total > maxBytes {
		return Info{}, fmt.Errorf("%w: %d sub-filters take %d bytes, more than %d", ErrTooLarge, h.filters, total, maxBytes)
	}
	return Info{Size: 40 + 16*h.filters + total, Buckets: h.buckets, Filters: h.filters, Items: h.items,
		Deleted: h.deletes, BucketSize: h.bucketSize, Expansion: h.expansion, MaxIterations: h.maxIterations}, nil
}

// Bytes is the bytes of the buckets of the filter in describes: Size
// less CF.INFO's bookkeeping (40 + 16 per sub-filter).
func (in Info) Bytes() uint64 { return in.Size - 40 - 16*in.Filters }

// DumpHeader is the dump header (Filter.DumpHeader) of the filter in
// describes.
func (in Info) DumpHeader() []byte {
	b := make([]byte, DumpHeaderSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], in.Items)
	le.PutUint64(b[8:], in.Buckets)
	le.PutUint64(b[16:], in.Deleted)
	le.PutUint64(b[24:], in.Filters)
	le.PutUint16(b[32:], uint16(in.BucketSize))
	le.PutUint16(b[34:], uint16(in.MaxIterations))
	le.PutUint16(b[36:], uint16(in.Expansion))
	return b
}
