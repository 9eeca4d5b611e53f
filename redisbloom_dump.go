package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// RedisBloom's dump header (BF.SCANDUMP at iterator 0), for filters in the
// RedisBloom layout, so that RedisBloom (or Redis 8) can BF.LOADCHUNK a
// filter dumped here and a filter it dumped loads here: packed,
// little-endian, 20 bytes of chain (items u64, sub-filters u32, options
// u32, growth u32), then 53 bytes per sub-filter (bytes u64, bits u64,
// items u64, error f64, bits per entry f64, hashes u32, capacity u64, n2
// u8). The payload after it (DumpChunk's iterators ≥ 1) is the same as for
// Bloomery's own header: the sub-filters' bit arrays, oldest first.
// docs/FORMAT.md, "RedisBloom's dump header", has the table.

const (
	rbChainSize = 20 // bytes of a RedisBloom dump header before its sub-filters
	rbLinkSize  = 53 // bytes per sub-filter
)

// RedisBloom's memory per chain and per sub-filter on 64-bit hosts (its
// SBChain and SBLink structures), which BF.INFO's Size counts.
const (
	rbChainMem = 32
	rbLinkMem  = 64
)

// RedisBloom's filter options (bloom.h).
const (
	rbOptNoRound    = 1 // sized as n·bpe bits, not a power of two
	rbOptEntsIsBits = 2 // sized by a bit count
	rbOptForce64    = 4 // 64-bit hashing (MurmurHash64A)
	rbOptNoScaling  = 8 // non-scaling
	rbOptKnown      = rbOptNoRound | rbOptEntsIsBits | rbOptForce64 | rbOptNoScaling
)

// redisBloomOptions are the options RedisBloom gives every filter its
// commands make: FORCE64|NOROUND, with NO_SCALING when non-scaling.
func redisBloomOptions(nonScaling bool) uint32 {
	if nonScaling {
		return rbOptForce64 | rbOptNoRound | rbOptNoScaling
	}
	return rbOptForce64 | rbOptNoRound
}

// rbLink is one sub-filter of a RedisBloom dump header.
type rbLink struct {
	bytes, bits, size uint64
	err, bpe          float64
	hashes            uint32
	entries           uint64
	n2                uint8
}

func (l *rbLink) put(b []byte) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], l.bytes)
	le.PutUint64(b[8:], l.bits)
	le.PutUint64(b[16:], l.size)
	le.PutUint64(b[24:], math.Float64bits(l.err))
	le.PutUint64(b[32:], math.Float64bits(l.bpe))
	le.PutUint32(b[40:], l.hashes)
	le.PutUint64(b[44:], l.entries)
	b[52] = l.n2
}

func readRBLink(b []byte) rbLink {
	le := binary.LittleEndian
	return rbLink{bytes: le.Uint64(b[0:]), bits: le.Uint64(b[8:]), size: le.Uint64(b[16:]),
		err: math.Float64frombits(le.Uint64(b[24:])), bpe: math.Float64frombits(le.Uint64(b[32:])),
		hashes: le.Uint32(b[40:]), entries: le.Uint64(b[44:]), n2: b[52]}
}

// RedisBloomHeader returns RedisBloom's dump header of s (BF.SCANDUMP's
// chunk at iterator 0; DumpChunk gives it for such filters), which
// LoadRedisBloomHeader, or RedisBloom's BF.LOADCHUNK, reads back. Only a
// filter in the RedisBloom layout has one; for others the error wraps
// ErrInvalidLayout. It is taken while no Add is under way.
func (s *Scalable) RedisBloomHeader() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.filters()
	if l := s.prm.layout; l != RedisBloom {
		return nil, fmt.Errorf("%w: a %s filter has no RedisBloom dump header (only the RedisBloom layout has)", ErrInvalidLayout, l)
	}
	b := make([]byte, rbChainSize+rbLinkSize*len(fs))
	le := binary.LittleEndian
	le.PutUint64(b[0:], s.Count())
	le.PutUint32(b[8:], uint32(len(fs)))
	le.PutUint32(b[12:], s.prm.rbOptions)
	le.PutUint32(b[16:], s.prm.rbGrowth)
	for i, f := range fs {
		l := rbLink{bytes: f.Bytes(), bits: f.m(), size: f.Inserted(), err: f.p, bpe: f.ext.bitsPerEntry(),
			hashes: f.k, entries: f.n, n2: f.ext.n2}
		l.put(b[rbChainSize+rbLinkSize*i:])
	}
	return b, nil
}

// errRedisBloomHeader prefixes the errors of LoadRedisBloomHeader.
var errRedisBloomHeader = fmt.Errorf("%w: RedisBloom dump header", ErrFormat)

// LoadRedisBloomHeader returns the RedisBloom-layout filter whose
// RedisBloom dump header (BF.SCANDUMP at iterator 0, or RedisBloomHeader)
// is b, with every bit array zero and each sub-filter's item count as
// recorded; load the payload chunks into it with LoadChunk. It takes
// what RedisBloom's BF.LOADCHUNK takes (length, sub-filters, option
// bits, each sub-filter's integrity, the item counts), headers made by
// hand or by older RedisBloom versions included, within Bloomery's limits
// (redisbloom_chain.go); the filter keeps every field as recorded.
// Errors wrap ErrFormat (ErrInvalidSize for bits that are not a multiple
// of 64), or ErrTooLarge for bit arrays over the size limit, all before
// any bit array is allocated. Options: WithMaxBytes (which also bounds
// later growth), WithConcurrent; WithLayout is ignored, WithKey is an
// error (ErrInvalidLayout).
func LoadRedisBloomHeader(b []byte, opts ...Option) (*Scalable, error) {
	c := newConfig(opts)
	c.layout = RedisBloom
	if err := c.checkLayout(RedisBloom); err != nil {
		return nil, err
	}
	h, err := checkRedisBloomHeader(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errRedisBloomHeader, err)
	}
	subs, err := h.sizings(c.maxBytes)
	if err != nil {
		return nil, err
	}
	s := &Scalable{prm: params(h.prm)}
	hash := rbHashOf(h.prm.rbOptions)
	fs := make([]*Filter, len(subs))
	for i, sz := range subs {
		fs[i] = &s.first
		if i > 0 {
			fs[i] = new(Filter)
		}
		if err := initFilter(fs[i], sz, c); err != nil {
			return nil, err
		}
		fs[i].ext = rbExt(hash, sz.P, sz.BPE, h.links[i].n2)
		fs[i].setInserted(h.links[i].size)
	}
	s.setChain(fs)
	return s, nil
}

// LoadDumpHeader reads the header of either dump, Bloomery's (DumpHeader,
// which begins with "BLOOMERY") with LoadScalableHeader or RedisBloom's
// (RedisBloomHeader: anything else) with LoadRedisBloomHeader: the
// header DumpChunk gives at iterator 0, for a filter of any layout.
// (RedisBloom's header begins with its item count, which would have to be
// about 6.4·10^18 to spell "BLOOMERY".)
func LoadDumpHeader(b []byte, opts ...Option) (*Scalable, error) {
	if len(b) >= len(formatMagic) && string(b[:len(formatMagic)]) == formatMagic {
		return LoadScalableHeader(b, opts...)
	}
	return LoadRedisBloomHeader(b, opts...)
}

// rbHeader is a checked RedisBloom dump header: its links and the growth
// parameters of the chain they make (without a size limit yet).
type rbHeader struct {
	links []rbLink
	prm   growthParams
}

// checkRedisBloomHeader parses b and checks it as RedisBloom does.
func checkRedisBloomHeader(b []byte) (rbHeader, error) {
	if len(b) < rbChainSize {
		return rbHeader{}, fmt.Errorf("%d bytes, shorter than its %d-byte start", len(b), rbChainSize)
	}
	le := binary.LittleEndian
	size, n, options, growth := le.Uint64(b[0:]), le.Uint32(b[8:]), le.Uint32(b[12:]), le.Uint32(b[16:])
	if n == 0 {
		return rbHeader{}, errors.New("no sub-filters")
	}
	if want := rbChainSize + rbLinkSize*uint64(n); uint64(len(b)) != want {
		return rbHeader{}, fmt.Errorf("%d bytes, a header of %d sub-filters has %d", len(b), n, want)
	}
	if n > maxRedisBloomLinks {
		return rbHeader{}, fmt.Errorf("%d sub-filters, Bloomery takes at most %d", n, maxRedisBloomLinks)
	}
	links := make([]rbLink, n) // bounded by len(b)
	for i := range links {
		links[i] = readRBLink(b[rbChainSize+rbLinkSize*i:])
		if err := checkRBSub(links[i].sizing(), links[i].n2); err != nil {
			return rbHeader{}, fmt.Errorf("sub-filter %d: %w", i, err)
		}
		if links[i].bits != links[i].bytes*8 || links[i].bytes > math.MaxUint64/8 { // RedisBloom's bytes·8 may wrap
			return rbHeader{}, fmt.Errorf("sub-filter %d: %d bits for %d bytes", i, links[i].bits, links[i].bytes)
		}
	}
	if err := checkRBOptions(options, rbHashOf(options)); err != nil {
		return rbHeader{}, err
	}
	var total, capacity uint64
	for _, l := range links {
		if total += l.size; total < l.size {
			return rbHeader{}, errors.New("the sub-filters' item counts overflow")
		}
		if capacity += l.entries; capacity > math.MaxInt64 || capacity < l.entries {
			return rbHeader{}, errors.New("the sub-filters' capacities sum past 2^63-1")
		}
	}
	if total != size {
		return rbHeader{}, fmt.Errorf("%d items in the header, %d in the sub-filters", size, total)
	}
	return rbHeader{links: links, prm: rbParams(growth, options, links[0].err, 0)}, nil
}

// sizing is l's geometry.
func (l *rbLink) sizing() Sizing {
	return Sizing{Layout: RedisBloom, N: l.entries, P: l.err, Bits: l.bits, K: l.hashes, BPE: l.bpe}
}

// sizings are the geometries of h's sub-filters within maxBytes in all;
// the growth parameters get the limit.
func (h *rbHeader) sizings(maxBytes uint64) ([]Sizing, error) {
	subs := make([]Sizing, len(h.links))
	var total uint64
	for i, l := range h.links {
		sz := l.sizing()
		if sz.Bytes() > maxBytes-total || sz.Bytes() > maxArrayBytes {
			return nil, fmt.Errorf("%w: RedisBloom sub-filter %d has %d bytes after %d, limit %d", ErrTooLarge, i, sz.Bytes(), total, maxBytes)
		}
		total += sz.Bytes()
		subs[i] = sz
	}
	h.prm.maxBytes = maxBytes
	return subs, nil
}

// checkRedisBloomParams checks the RedisBloom fields of a kind-2
// parameter block (growth and options) of a chain hashed with hash
// against the chain's growth parameters gp (from the block's expansion
// and split), and returns the chain's growth parameters: RedisBloom's
// split, known options as the hash says, and an expansion of 0 for a
// non-scaling chain and of the growth for a scaling one.
func checkRedisBloomParams(gp growthParams, growth, options uint32, hash HashID) (growthParams, error) {
	var err error
	switch {
	case gp.r != 0.5 || gp.f != 0.5:
		err = fmt.Errorf("tightening %v and first share %v (RedisBloom's are 0.5)", gp.r, gp.f)
	case checkRBOptions(options, hash) != nil:
		err = checkRBOptions(options, hash)
	case options&rbOptNoScaling != 0 && gp.s != 0, options&rbOptNoScaling == 0 && gp.s != uint64(growth):
		err = fmt.Errorf("expansion %d with growth %d and options %#x", gp.s, growth, options)
	}
	if err != nil {
		return gp, fmt.Errorf("%w: a RedisBloom-layout filter: %w", ErrFormat, err)
	}
	gp.rb, gp.rbGrowth, gp.rbOptions = true, growth, options
	return gp, nil
}
