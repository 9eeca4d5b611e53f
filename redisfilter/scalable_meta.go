package redisfilter

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bloomery/bloom"
)

// The values of the "format" field of a scalable filter's metadata hash:
// its kind and version. In version 1 every sub-filter has the filter's
// layout (the plan is uniform: bloom.ScalablePlan.UniformLayout); in
// version 2, that of blocked filters whose small sub-filters are classic
// (bloom's rule, docs/DESIGN.md §5), each sub-filter has the layout the
// plan gives it. A client that knows only version 1 refuses version 2
// with ErrMetadata, rather than reading a classic sub-filter as blocked.
const (
	scalableFormat      = "bloomery-scalable 1"
	scalableFormatSmall = "bloomery-scalable 2"
)

// scalableMeta is a scalable filter's metadata as read (or last written
// by this client). It is immutable once made: a growth makes a new one.
//
// In Redis it is the hash named after the filter (HGETALL name), e.g.
//
//	format       bloomery-scalable 1   (2: small sub-filters classic)
//	layout       blocked
//	hash         xxh3-128
//	key-check    0
//	n0           100
//	p            0.01
//	expansion    2              (0: non-scaling)
//	tightening   0.5
//	first-share  0.5
//	id           5f3a9b1c       (random, made by Create)
//	prefix       {seen}:5f3a9b1c:
//	filters      2
//	items        150
//	sub.0        n=100 p=0.005 bits=1536 k=8
//	items.0      100
//	sub.1        n=200 p=0.0025 bits=3584 k=9
//	items.1      50
//	writes       9c41e07d0a3b5f12:1f   (the last write's token)
//
// Sub-filter i is the bitmap prefix+i. The counters (filters, items,
// items.i) change only inside the add script and the gate, with the bits.
// "writes" is a token that every write of bits replaces with a new,
// unique one, in the same atomic step: a client that knows the bits as of
// a token knows them now while the token is unchanged, which is what a
// mirror trusts (scalable_mirror.go). Filters made before it have no
// "writes" field, and no mirror; a client that does not know the field
// refuses the metadata (it counts the fields), so no writer that leaves
// the token alone can reach a filter that has one.
type scalableMeta struct {
	plan     bloom.ScalablePlan
	hash     bloom.HashID
	keyCheck uint32
	id       string
	prefix   string
	subs     []bloom.Sizing // one per sub-filter, as stored
	counts   []uint64       // items per sub-filter, as read
	items    uint64
	tracked  bool // it has the "writes" token (no mirror without it)

	// next is the sub-filter a growth opens, or why there can be none,
	// worked out when first needed (sizing takes milliseconds).
	nextOnce sync.Once
	next     bloom.Sizing
	nextErr  error

	// lastFill is the last sub-filter's count as this client last saw
	// it: a hint AddMany picks a gated write or the script by (the gate
	// decides).
	lastFill atomic.Uint64
}

// fields returns the metadata as hash fields for HSET.
func (m *scalableMeta) fields() []any {
	f := []any{
		"format", m.format(),
		"layout", m.plan.Layout.String(),
		"hash", m.hash.String(),
		"key-check", strconv.FormatUint(uint64(m.keyCheck), 10),
		"n0", strconv.FormatUint(m.plan.N0, 10),
		"p", formatFloat(m.plan.P),
		"expansion", strconv.FormatUint(m.plan.Expansion, 10),
		"tightening", formatFloat(m.plan.Tightening),
		"first-share", formatFloat(m.plan.FirstShare),
		"id", m.id,
		"prefix", m.prefix,
		"filters", strconv.Itoa(len(m.subs)),
		"items", strconv.FormatUint(m.items, 10),
		"writes", m.id, // any unique token: the id is random, and no write makes it
	}
	for i, s := range m.subs {
		f = append(f, "sub."+strconv.Itoa(i), subSpec(s), "items."+strconv.Itoa(i), strconv.FormatUint(m.counts[i], 10))
	}
	return f
}

// format is the metadata's version: 2 for a plan whose small sub-filters
// are classic, else 1.
func (m *scalableMeta) format() string {
	if m.plan.Layout == bloom.Blocked && !m.plan.UniformLayout {
		return scalableFormatSmall
	}
	return scalableFormat
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// subSpec is the text of a sub-filter's geometry in the metadata.
func subSpec(s bloom.Sizing) string {
	return fmt.Sprintf("n=%d p=%s bits=%d k=%d", s.N, formatFloat(s.P), s.Bits, s.K)
}

func parseSubSpec(text string, layout bloom.Layout) (bloom.Sizing, error) {
	s := bloom.Sizing{Layout: layout}
	var p string
	if _, err := fmt.Sscanf(text, "n=%d p=%s bits=%d k=%d", &s.N, &p, &s.Bits, &s.K); err != nil {
		return s, fmt.Errorf("%.60q: %w", text, err)
	}
	var err error
	if s.P, err = strconv.ParseFloat(p, 64); err != nil {
		return s, err
	}
	if subSpec(s) != text {
		return s, fmt.Errorf("%.60q is not in canonical form", text)
	}
	return s, s.Validate()
}

// subKey names sub-filter i.
func (m *scalableMeta) subKey(i int) string { return m.prefix + strconv.Itoa(i) }

// pendingKey names the sorted set of the reservations of gated writes in
// flight, and holdKey the name a refusing gate moves the last sub-filter
// to for the length of its transaction (scalable_fast.go). Sub-filter
// keys end in digits, so neither is ever one.
func (m *scalableMeta) pendingKey() string { return m.prefix + "pending" }
func (m *scalableMeta) holdKey() string    { return m.prefix + "hold" }

// subKeys returns the keys of the sub-filters.
func (m *scalableMeta) subKeys() []string {
	keys := make([]string, len(m.subs))
	for i := range keys {
		keys[i] = m.subKey(i)
	}
	return keys
}

// keys returns the metadata key and the keys of sub-filters 0 … n-1.
func (m *scalableMeta) keys(name string, n int) []string {
	keys := make([]string, 0, n+1)
	keys = append(keys, name)
	for i := range n {
		keys = append(keys, m.subKey(i))
	}
	return keys
}

// capacity and bytes are the totals over the sub-filters.
func (m *scalableMeta) capacity() uint64 {
	var c uint64
	for _, s := range m.subs {
		c += s.N
	}
	return c
}

func (m *scalableMeta) bytes() uint64 {
	var b uint64
	for _, s := range m.subs {
		b += s.Bytes()
	}
	return b
}

// nextSub returns the sub-filter a growth opens: the plan's next one,
// within a Redis string and maxBytes in total.
func (m *scalableMeta) nextSub(maxBytes uint64) (bloom.Sizing, error) {
	m.nextOnce.Do(func() {
		i := len(m.subs)
		m.next, m.nextErr = m.plan.Sub(i)
		switch {
		case m.nextErr != nil:
		case m.next.Bytes() > MaxShardBytes:
			m.nextErr = fmt.Errorf("%w: sub-filter %d needs %d bytes, more than one Redis string holds (%d)",
				ErrTooLarge, i, m.next.Bytes(), MaxShardBytes)
		case m.bytes()+m.next.Bytes() > maxBytes:
			m.nextErr = fmt.Errorf("%w: growing to %d bytes, limit %d", ErrTooLarge, m.bytes()+m.next.Bytes(), maxBytes)
		}
	})
	return m.next, m.nextErr
}

// grown returns m with next appended, as the add script appended it.
func (m *scalableMeta) grown(next bloom.Sizing) *scalableMeta {
	return &scalableMeta{plan: m.plan, hash: m.hash, keyCheck: m.keyCheck, id: m.id, prefix: m.prefix, tracked: m.tracked,
		subs:   append(m.subs[:len(m.subs):len(m.subs)], next),
		counts: append(m.counts[:len(m.counts):len(m.counts)], 0),
		items:  m.items}
}

// newScalableMeta makes the metadata of a new filter.
func newScalableMeta(name string, plan bloom.ScalablePlan, keyCheck uint32, maxBytes uint64) (*scalableMeta, error) {
	first, err := plan.Sub(0)
	if err != nil {
		return nil, err
	}
	if first.Bytes() > MaxShardBytes {
		return nil, fmt.Errorf("%w: the first sub-filter needs %d bytes, more than one Redis string holds (%d)",
			ErrTooLarge, first.Bytes(), MaxShardBytes)
	}
	if first.Bytes() > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, first.Bytes(), maxBytes)
	}
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	m := &scalableMeta{plan: plan, hash: bloom.HashXXH3, keyCheck: keyCheck, id: id, tracked: true,
		subs: []bloom.Sizing{first}, counts: []uint64{0}}
	if keyCheck != 0 {
		m.hash = bloom.HashSipHash
	}
	if m.prefix, err = subPrefix(name, m.id); err != nil {
		return nil, err
	}
	return m, nil
}

// parseScalableMeta reads the fields of a metadata hash (HGETALL) of the
// filter name and checks them.
func parseScalableMeta(name string, h map[string]string) (*scalableMeta, error) {
	format := h["format"]
	if format != scalableFormat && format != scalableFormatSmall {
		return nil, fmt.Errorf("%w: format %.40q, want %q or %q", ErrMetadata, format, scalableFormat, scalableFormatSmall)
	}
	m := &scalableMeta{id: h["id"], prefix: h["prefix"]}
	filters, err := parseScalableFields(h, m)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMetadata, err)
	}
	m.plan.UniformLayout = format == scalableFormat && m.plan.Layout == bloom.Blocked
	if m.format() != format {
		return nil, fmt.Errorf("%w: format %q with layout %s", ErrMetadata, format, m.plan.Layout)
	}
	_, m.tracked = h["writes"]
	if fields := 13 + 2*filters; len(h) != fields && (!m.tracked || len(h) != fields+1) {
		return nil, fmt.Errorf("%w: %d fields for %d sub-filters", ErrMetadata, len(h), filters)
	}
	var sum uint64
	for i := range filters {
		if err := m.parseSub(h, i); err != nil {
			return nil, fmt.Errorf("%w: sub-filter %d: %w", ErrMetadata, i, err)
		}
		sum += m.counts[i]
	}
	if sum != m.items {
		return nil, fmt.Errorf("%w: items %d, the sub-filters hold %d", ErrMetadata, m.items, sum)
	}
	m.lastFill.Store(m.counts[filters-1])
	if slot(m.prefix) != slot(name) {
		return nil, fmt.Errorf("%w: prefix %.60q is not in the slot of %.60q", ErrMetadata, m.prefix, name)
	}
	return m, nil
}

// parseScalableFields parses the fields other than the sub-filters' and
// returns the number of sub-filters.
func parseScalableFields(h map[string]string, m *scalableMeta) (int, error) {
	var filters uint64
	var err error
	for _, field := range []string{"layout", "hash", "key-check", "n0", "p", "expansion", "tightening", "first-share", "filters", "items"} {
		v, ok := h[field]
		if !ok {
			return 0, fmt.Errorf("no %s", field)
		}
		switch field {
		case "layout":
			if m.plan.Layout, err = bloom.ParseLayout(v); err == nil {
				err = checkLayout(m.plan.Layout)
			}
		case "hash":
			m.hash, err = parseHashID(v)
		case "key-check":
			var c uint64
			c, err = strconv.ParseUint(v, 10, 32)
			m.keyCheck = uint32(c)
		case "n0":
			m.plan.N0, err = strconv.ParseUint(v, 10, 64)
		case "p":
			m.plan.P, err = strconv.ParseFloat(v, 64)
		case "expansion":
			m.plan.Expansion, err = strconv.ParseUint(v, 10, 64)
		case "tightening":
			m.plan.Tightening, err = strconv.ParseFloat(v, 64)
		case "first-share":
			m.plan.FirstShare, err = strconv.ParseFloat(v, 64)
		case "filters":
			filters, err = strconv.ParseUint(v, 10, 64)
		case "items":
			m.items, err = strconv.ParseUint(v, 10, 64)
		}
		if err != nil {
			return 0, fmt.Errorf("%s %.40q: %w", field, v, err)
		}
	}
	switch {
	case (m.hash == bloom.HashSipHash) != (m.keyCheck != 0):
		return 0, fmt.Errorf("hash %s with key check %d", m.hash, m.keyCheck)
	case filters < 1 || filters > bloom.MaxSubFilters || m.plan.Expansion == 0 && filters > 1:
		return 0, fmt.Errorf("%d sub-filters (expansion %d)", filters, m.plan.Expansion)
	case m.id == "" || m.prefix == "":
		return 0, errors.New("no id or prefix")
	}
	if _, _, err := m.plan.SubRate(0); err != nil {
		return 0, err
	}
	return int(filters), nil
}

// parseSub parses sub-filter i's geometry and count, and checks that its
// capacity and rate are the plan's, in the layout the plan gives it (its
// bits and k may come from another version of the sizing).
func (m *scalableMeta) parseSub(h map[string]string, i int) error {
	n, p, err := m.plan.SubRate(i)
	if err != nil {
		return err
	}
	layout := m.plan.Layout
	if m.format() == scalableFormatSmall {
		want, err := m.plan.Sub(i)
		if err != nil {
			return err
		}
		layout = want.Layout
	}
	s, err := parseSubSpec(h["sub."+strconv.Itoa(i)], layout)
	if err != nil {
		return err
	}
	if s.N != n || math.Abs(s.P-p) > 1e-12*p {
		return fmt.Errorf("capacity %d at rate %g, the plan says %d at %g", s.N, s.P, n, p)
	}
	if s.Bytes() > MaxShardBytes {
		return fmt.Errorf("%d bytes", s.Bytes())
	}
	count, err := strconv.ParseUint(h["items."+strconv.Itoa(i)], 10, 64)
	if err != nil {
		return fmt.Errorf("items: %w", err)
	}
	m.subs = append(m.subs, s)
	m.counts = append(m.counts, count)
	return nil
}

// randomID is a new random id of a filter's keys: 8 hex digits.
func randomID() (string, error) {
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(id[:]), nil
}

// subPrefix returns the prefix of the sub-filter keys of filter name: the
// keys must lie in name's cluster slot, so that one script may touch them
// all. A name with a hash tag keeps it ("user{42}seen" → "user{42}seen:"
// + id + ":"); another becomes the tag ("seen" → "{seen}:" + id + ":");
// a name that cannot (it holds a "}", or is empty) gets a tag found to
// have its slot.
func subPrefix(name, id string) (string, error) {
	tag := hashTag(name)
	switch {
	case tag != name:
		return name + ":" + id + ":", nil
	case name != "" && !strings.Contains(name, "}"): // "{}" would be an empty tag: no tag
		return "{" + name + "}:" + id + ":", nil
	}
	want := slot(name)
	for i := range 1 << 24 {
		t := "s" + strconv.Itoa(i)
		if slot(t) == want {
			return "{" + t + "}:" + id + ":", nil
		}
	}
	return "", fmt.Errorf("%w: no hash tag found for %q", ErrInvalid, name)
}

// hashTag is the part of key that Redis Cluster hashes: the text between
// the first "{" and the next "}" if not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// slot is key's Redis Cluster slot: CRC16 (XMODEM) of its hash tag, mod
// 16384.
func slot(key string) uint16 {
	var crc uint16
	for _, b := range []byte(hashTag(key)) {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc & 16383
}
