package redisfilter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bloomery/bloom"
	"github.com/zeebo/xxh3"
)

// metaVersion is the version of the metadata format.
const metaVersion = 1

// maxShards bounds the shard count read from metadata.
const maxShards = 1 << 16

// Meta is a filter's metadata, kept as text in the key named after the
// filter, for example (GET name):
//
//	bloomery-filter 1
//	layout blocked
//	hash xxh3-128
//	key-check 0
//	bits 9586688
//	k 7
//	n 1000000
//	p 0.01
//	shard-bits 2147483648
//	generation 1
//	shard {8c1f2a9e.1.0}name
type Meta struct {
	Sizing     bloom.Sizing
	Hash       bloom.HashID
	KeyCheck   uint32   // 0 when unkeyed
	ShardBits  uint64   // bits per shard (the last one may be shorter)
	Generation uint64   // bumped by each rotation
	Shards     []string // shard keys, in order
}

// shardKeys names the shards of generation gen of name.
func shardKeys(name string, gen, n uint64) []string {
	tag := uint32(xxh3.HashString(name))
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{%08x.%d.%d}%s", tag, gen, i, name)
	}
	return keys
}

func newMeta(name string, s bloom.Sizing, keyCheck uint32, shardBytes, gen uint64) (Meta, error) {
	shardBits := min(shardBytes*8, s.Bits)
	shards := (s.Bits + shardBits - 1) / shardBits
	if s.Layout != bloom.Blocked && shards > 1 {
		return Meta{}, fmt.Errorf("%w: a %s filter of %d bytes does not fit one %d-byte shard (use the blocked layout)",
			ErrTooLarge, s.Layout, s.Bytes(), shardBytes)
	}
	if shards > maxShards {
		return Meta{}, fmt.Errorf("%w: %d shards", ErrTooLarge, shards)
	}
	h := bloom.HashXXH3
	if keyCheck != 0 {
		h = bloom.HashSipHash
	}
	return Meta{Sizing: s, Hash: h, KeyCheck: keyCheck, ShardBits: shardBits, Generation: gen,
		Shards: shardKeys(name, gen, shards)}, nil
}

func (m Meta) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bloomery-filter %d\nlayout %s\nhash %s\nkey-check %d\nbits %d\nk %d\nn %d\np %s\nshard-bits %d\ngeneration %d\n",
		metaVersion, m.Sizing.Layout, m.Hash, m.KeyCheck, m.Sizing.Bits, m.Sizing.K, m.Sizing.N,
		strconv.FormatFloat(m.Sizing.P, 'g', -1, 64), m.ShardBits, m.Generation)
	for _, k := range m.Shards {
		fmt.Fprintf(&b, "shard %s\n", k)
	}
	return b.String()
}

// parseMeta parses and validates metadata text.
func parseMeta(text string) (Meta, error) {
	var m Meta
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) == 0 || lines[0] != fmt.Sprintf("bloomery-filter %d", metaVersion) {
		first, _, _ := strings.Cut(text, "\n")
		return m, fmt.Errorf("%w: first line %.40q, want \"bloomery-filter %d\"", ErrMetadata, first, metaVersion)
	}
	seen := map[string]bool{}
	for _, line := range lines[1:] {
		field, value, ok := strings.Cut(line, " ")
		if !ok || value == "" {
			return m, fmt.Errorf("%w: line %.60q", ErrMetadata, line)
		}
		if field != "shard" && seen[field] {
			return m, fmt.Errorf("%w: %s given twice", ErrMetadata, field)
		}
		seen[field] = true
		var err error
		switch field {
		case "layout":
			if m.Sizing.Layout, err = bloom.ParseLayout(value); err == nil {
				err = checkLayout(m.Sizing.Layout)
			}
		case "hash":
			m.Hash, err = parseHashID(value)
		case "key-check":
			var v uint64
			v, err = strconv.ParseUint(value, 10, 32)
			m.KeyCheck = uint32(v)
		case "bits":
			m.Sizing.Bits, err = strconv.ParseUint(value, 10, 64)
		case "k":
			var v uint64
			v, err = strconv.ParseUint(value, 10, 32)
			m.Sizing.K = uint32(v)
		case "n":
			m.Sizing.N, err = strconv.ParseUint(value, 10, 64)
		case "p":
			m.Sizing.P, err = strconv.ParseFloat(value, 64)
		case "shard-bits":
			m.ShardBits, err = strconv.ParseUint(value, 10, 64)
		case "generation":
			m.Generation, err = strconv.ParseUint(value, 10, 64)
		case "shard":
			if len(m.Shards) >= maxShards {
				err = fmt.Errorf("more than %d shards", maxShards)
			}
			m.Shards = append(m.Shards, value)
		default:
			err = fmt.Errorf("unknown field")
		}
		if err != nil {
			return m, fmt.Errorf("%w: %s: %w", ErrMetadata, field, err)
		}
	}
	for _, f := range []string{"layout", "hash", "key-check", "bits", "k", "n", "p", "shard-bits", "generation", "shard"} {
		if !seen[f] {
			return m, fmt.Errorf("%w: no %s", ErrMetadata, f)
		}
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("%w: %w", ErrMetadata, err)
	}
	return m, nil
}

func (m Meta) check() error {
	s := m.Sizing
	if err := s.Validate(); err != nil {
		return err
	}
	if (m.Hash == bloom.HashSipHash) != (m.KeyCheck != 0) {
		return fmt.Errorf("hash %s with key check %d", m.Hash, m.KeyCheck)
	}
	if m.ShardBits == 0 || m.ShardBits%512 != 0 && m.ShardBits != s.Bits || m.ShardBits > MaxShardBytes*8 {
		return fmt.Errorf("shard bits %d", m.ShardBits)
	}
	if want := (s.Bits + m.ShardBits - 1) / m.ShardBits; uint64(len(m.Shards)) != want {
		return fmt.Errorf("%d shards named, %d bits need %d", len(m.Shards), s.Bits, want)
	}
	if s.Layout != bloom.Blocked && len(m.Shards) > 1 {
		return fmt.Errorf("a %s filter with %d shards", s.Layout, len(m.Shards))
	}
	return nil
}

// locate maps a logical offset to its shard and the offset in that shard.
func (m *Meta) locate(o uint64) (int, uint64) {
	i := o / m.ShardBits
	return int(i), o - i*m.ShardBits
}

// shardLen is the length in bytes of shard i.
func (m *Meta) shardLen(i int) uint64 {
	return min(m.ShardBits, m.Sizing.Bits-uint64(i)*m.ShardBits) / 8
}

// parseHashID parses a hash identity as HashID.String writes it.
func parseHashID(v string) (bloom.HashID, error) {
	for _, h := range []bloom.HashID{bloom.HashXXH3, bloom.HashSipHash} {
		if v == h.String() {
			return h, nil
		}
	}
	return 0, fmt.Errorf("unknown hash %q", v)
}

// keyMismatch says why a client with key (nil: none) cannot use a filter
// whose key check is check (0: unkeyed), or returns nil.
func keyMismatch(key *[16]byte, check uint32) error {
	switch {
	case check != 0 && key == nil:
		return ErrKeyRequired
	case check == 0 && key != nil:
		return fmt.Errorf("%w: the filter is not keyed", ErrWrongKey)
	case check != 0 && bloom.KeyCheck(*key) != check:
		return ErrWrongKey
	}
	return nil
}
