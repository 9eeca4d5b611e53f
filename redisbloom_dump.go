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
	le.PutUint32(b[12:], redisBloomOptions(s.prm.s == 0))
	le.PutUint32(b[16:], s.prm.rbGrowth)
	for i, f := range fs {
		l := rbLink{bytes: f.Bytes(), bits: f.m(), size: f.Inserted(), err: f.p, bpe: f.ext.bitsPerEntry(),
			hashes: f.k, entries: f.n}
		l.put(b[rbChainSize+rbLinkSize*i:])
	}
	return b, nil
}

// errRedisBloomHeader prefixes the errors of LoadRedisBloomHeader.
var errRedisBloomHeader = fmt.Errorf("%w: RedisBloom dump header", ErrFormat)

// LoadRedisBloomHeader returns the RedisBloom-layout filter whose
// RedisBloom dump header (BF.SCANDUMP at iterator 0, or RedisBloomHeader)
// is b, with every bit array zero and each sub-filter's item count as
// recorded; load the payload chunks into it with LoadChunk. It checks b
// first as RedisBloom's BF.LOADCHUNK does (length, sub-filters, option
// bits, each sub-filter's integrity, the item counts), then that it is a
// filter today's RedisBloom makes: 64-bit hashing and no power-of-two
// sizing (older RedisBloom versions; refused with an error that says
// so), RedisBloom's growth and sizing rules. Errors wrap ErrFormat (and
// ErrInvalidLayout for the filters of older versions), or ErrTooLarge
// for bit arrays over the size limit, all before any bit array is
// allocated. Options: WithMaxBytes (which also bounds later growth),
// WithConcurrent; WithLayout is ignored, WithKey is an error
// (ErrInvalidLayout).
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
	fs := make([]*Filter, len(subs))
	for i, sz := range subs {
		fs[i] = &s.first
		if i > 0 {
			fs[i] = new(Filter)
		}
		if err := initFilter(fs[i], sz, c); err != nil {
			return nil, err
		}
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

// checkRedisBloomHeader parses b and checks it as RedisBloom does, then
// as a chain RedisBloom makes today.
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
	links := make([]rbLink, n) // bounded by len(b)
	var total uint64
	for i := range links {
		links[i] = readRBLink(b[rbChainSize+rbLinkSize*i:])
		if err := links[i].checkIntegrity(); err != nil {
			return rbHeader{}, fmt.Errorf("sub-filter %d: %w", i, err)
		}
	}
	if options&^rbOptKnown != 0 {
		return rbHeader{}, fmt.Errorf("unknown option bits %#x", options&^rbOptKnown)
	}
	for _, l := range links {
		if total += l.size; total < l.size {
			return rbHeader{}, errors.New("the sub-filters' item counts overflow")
		}
	}
	if total != size {
		return rbHeader{}, fmt.Errorf("%d items in the header, %d in the sub-filters", size, total)
	}
	return checkRedisBloomChain(links, options, growth)
}

// checkIntegrity is RedisBloom's bloom_validate_integrity: an error rate
// in (0, 1), n2 ≤ 63, bits non-zero, bits = bytes·8, bits ≥ 2^n2 when n2
// is set, hashes = ⌈ln 2 · bpe⌉ (a bpe that gives no probe count fails).
func (l *rbLink) checkIntegrity() error {
	switch {
	case !(l.err > 0 && l.err < 1):
		return fmt.Errorf("error rate %v not in (0, 1)", l.err)
	case l.n2 > 63:
		return fmt.Errorf("n2 = %d above 63", l.n2)
	case l.n2 != 0 && l.bits < 1<<l.n2:
		return fmt.Errorf("%d bits below 2^n2 = 2^%d", l.bits, l.n2)
	case l.bits == 0 || l.bytes > math.MaxUint64/8 || l.bits != l.bytes*8: // RedisBloom's bytes·8 may wrap
		return fmt.Errorf("%d bits for %d bytes", l.bits, l.bytes)
	case l.hashes != redisBloomHashes(l.bpe) || l.hashes == 0:
		return fmt.Errorf("%d hashes for %v bits per entry", l.hashes, l.bpe)
	}
	return nil
}

// checkRedisBloomChain checks links as a chain today's RedisBloom makes:
// its options, growth, and each sub-filter's capacity, error rate and
// items by RedisBloom's growth rules (sub-filter i at capacity n0·growth^i
// and error e0/2^i, all but the last full). It returns the chain's growth
// parameters: compound rate 2·e0 (e0 when non-scaling).
func checkRedisBloomChain(links []rbLink, options, growth uint32) (rbHeader, error) {
	nonScaling := options&rbOptNoScaling != 0
	switch {
	case options&rbOptForce64 == 0:
		return rbHeader{}, fmt.Errorf("%w: 32-bit hashing (options %#x without FORCE64, as older RedisBloom versions made filters) is not supported", ErrInvalidLayout, options)
	case options&rbOptNoRound == 0 || options&rbOptEntsIsBits != 0 || links[0].n2 != 0:
		return rbHeader{}, fmt.Errorf("%w: power-of-two sizing (options %#x, n2 = %d, as older RedisBloom versions made filters) is not supported", ErrInvalidLayout, options, links[0].n2)
	case nonScaling && len(links) != 1:
		return rbHeader{}, fmt.Errorf("a non-scaling filter with %d sub-filters", len(links))
	case !nonScaling && growth == 0:
		return rbHeader{}, errors.New("a scaling filter with growth 0")
	case len(links) > maxRedisBloomLinks:
		return rbHeader{}, fmt.Errorf("%d sub-filters, RedisBloom makes at most %d", len(links), maxRedisBloomLinks)
	}
	prm := growthParams{p: links[0].err * 2, s: uint64(growth), r: 0.5, f: 0.5, rbGrowth: growth, layout: RedisBloom}
	if nonScaling {
		prm.p, prm.s = links[0].err, 0
	}
	if err := checkNP(links[0].entries, prm.p); err != nil {
		return rbHeader{}, fmt.Errorf("sub-filter 0 at capacity %d and error %g: %w", links[0].entries, links[0].err, err)
	}
	g := growthRule{links[0].entries, prm.p, prm.s, prm.r, prm.f}
	if total, ok := g.capacity(len(links)); !ok {
		return rbHeader{}, fmt.Errorf("%d sub-filters from capacity %d hold more than 2^63-1 items (%d)", len(links), g.n0, total)
	}
	for i, l := range links {
		capacity, p := g.sub(i)
		switch {
		case l.n2 != 0:
			return rbHeader{}, fmt.Errorf("%w: sub-filter %d has power-of-two sizing (n2 = %d), which older RedisBloom versions made; not supported", ErrInvalidLayout, i, l.n2)
		case l.entries != capacity || l.err != p:
			return rbHeader{}, fmt.Errorf("sub-filter %d: capacity %d at error %g, RedisBloom's growth gives %d at %g", i, l.entries, l.err, capacity, p)
		case l.size > l.entries || (i < len(links)-1 && l.size != l.entries):
			return rbHeader{}, fmt.Errorf("sub-filter %d: %d items for capacity %d", i, l.size, l.entries)
		}
	}
	return rbHeader{links: links, prm: prm}, nil
}

// sizings are the geometries of h's sub-filters, each checked as the
// kind-1 decoder checks one (RedisBloom's geometry for its capacity and
// error, no more items than bits), within maxBytes in all; the growth
// parameters get the limit.
func (h *rbHeader) sizings(maxBytes uint64) ([]Sizing, error) {
	subs := make([]Sizing, len(h.links))
	var total uint64
	for i, l := range h.links {
		sz := Sizing{Layout: RedisBloom, N: l.entries, P: l.err, Bits: l.bits, K: l.hashes, BPE: l.bpe}
		err := checkSizing(sz)
		if err == nil {
			err = sz.CheckRate()
		}
		if err == nil && l.size > sz.Bits {
			err = fmt.Errorf("%d items, more than its %d bits can record", l.size, sz.Bits)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: sub-filter %d: %w", errRedisBloomHeader, i, err)
		}
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
// parameter block (growth and options) against the chain's growth
// parameters gp, and returns the growth: RedisBloom's split, its options
// for a scaling or non-scaling filter, and a scaling filter's growth
// equal to its expansion.
func checkRedisBloomParams(gp growthParams, growth, options uint32) (uint32, error) {
	switch {
	case gp.r != 0.5 || gp.f != 0.5:
		return 0, fmt.Errorf("%w: a RedisBloom-layout filter with tightening %v and first share %v (RedisBloom's are 0.5)", ErrFormat, gp.r, gp.f)
	case options != redisBloomOptions(gp.s == 0):
		return 0, fmt.Errorf("%w: RedisBloom options %#x for expansion %d", ErrFormat, options, gp.s)
	case gp.s != 0 && uint64(growth) != gp.s:
		return 0, fmt.Errorf("%w: RedisBloom growth %d for expansion %d", ErrFormat, growth, gp.s)
	}
	return growth, nil
}
