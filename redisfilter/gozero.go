package redisfilter

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spaolacci/murmur3"
)

// GoZeroK is the number of bits per item of a go-zero filter, fixed by
// go-zero.
const GoZeroK = 14

// MaxGoZeroBits is the largest bit count OpenGoZero accepts: a Redis
// string holds 2³² bits.
const MaxGoZeroBits = 1 << 32

// GoZeroFilter is a Bloom filter written by go-zero's core/bloom package
// (github.com/zeromicro/go-zero/core/bloom): one Redis string under a key
// used as given, k = 14, and bit i of an item at offset
// murmur3.Sum64(item ‖ byte(i)) mod bits, numbered as SETBIT numbers them.
// It reads and writes exactly the bits go-zero does, so go-zero and
// GoZeroFilter users may share one filter, also at the same time.
//
// Compared with go-zero's own filter it changes an item's bits with one
// atomic BITFIELD command instead of a Lua script, offers batches
// (AddMany, ExistsMany: one pipelined round trip), reports from Add
// whether the item was new, never writes to the caller's item slices,
// and supports Expire and Delete.
//
// Its limits are go-zero's format: k is 14 whatever the filter's size,
// and the bit count is chosen by hand and not stored in Redis, so a wrong
// bits argument cannot be detected and makes Exists miss items. For new
// filters use Create, which sizes m and k for a capacity and error rate
// and records them. There is no conversion: the hashes differ, so a
// go-zero filter's items must be added again to a new Filter.
//
// A GoZeroFilter holds no mutable state and is safe for concurrent use.
type GoZeroFilter struct {
	client redis.UniversalClient
	key    string
	bits   uint64
}

// OpenGoZero returns the go-zero filter kept under key with bits bits
// (go-zero's bloom.New(store, key, bits) arguments). It does not touch
// Redis: a missing key is an empty filter, as in go-zero. It fails with
// ErrInvalid when bits is 0 or above MaxGoZeroBits.
func OpenGoZero(client redis.UniversalClient, key string, bits uint64) (*GoZeroFilter, error) {
	if bits == 0 || bits > MaxGoZeroBits {
		return nil, fmt.Errorf("redisfilter: open go-zero filter %q: %w: %d bits (from 1 to 2^32)", key, ErrInvalid, bits)
	}
	return &GoZeroFilter{client: client, key: key, bits: bits}, nil
}

// Key is the filter's Redis key.
func (f *GoZeroFilter) Key() string { return f.key }

// Bits is the filter's bit count, as given to OpenGoZero.
func (f *GoZeroFilter) Bits() uint64 { return f.bits }

// goZeroOffsets appends to dst the GoZeroK bit offsets of item in a
// filter of bits bits, hashing item ‖ byte(i) in buf (grown as needed and
// returned for reuse) so that item itself is never written to.
func goZeroOffsets(item []byte, bits uint64, buf []byte, dst []uint64) ([]uint64, []byte) {
	buf = append(append(buf[:0], item...), 0)
	last := len(buf) - 1
	for i := range GoZeroK {
		buf[last] = byte(i)
		dst = append(dst, murmur3.Sum64(buf)%bits)
	}
	return dst, buf
}

func (f *GoZeroFilter) run(ctx context.Context, items [][]byte, add bool) ([]bool, error) {
	var buf []byte
	b := bitBatch{client: f.client, name: f.key, keys: []string{f.key}, k: GoZeroK, add: add}
	return b.run(ctx, len(items), func(i int, offs []uint64) (int, []uint64) {
		offs, buf = goZeroOffsets(items[i], f.bits, buf, offs)
		return 0, offs
	})
}

// Add sets item's 14 bits with one atomic BITFIELD command (one round
// trip) and reports whether it was new: whether any of its bits was unset.
func (f *GoZeroFilter) Add(ctx context.Context, item []byte) (bool, error) {
	return first(f.run(ctx, [][]byte{item}, true))
}

// Exists reports whether item may be in the filter (one BITFIELD_RO
// command). It may return a false positive, never a false negative for
// an item added with the same bit count.
func (f *GoZeroFilter) Exists(ctx context.Context, item []byte) (bool, error) {
	return first(f.run(ctx, [][]byte{item}, false))
}

// AddMany adds items and reports for each whether it was new (a repeat
// within the batch reports false), in one pipelined round trip of
// BITFIELD commands of at most MaxOpsPerCommand bit operations; each
// item's bits change atomically.
func (f *GoZeroFilter) AddMany(ctx context.Context, items [][]byte) ([]bool, error) {
	return f.run(ctx, items, true)
}

// ExistsMany reports for each item whether it may be in the filter, in
// one pipelined round trip.
func (f *GoZeroFilter) ExistsMany(ctx context.Context, items [][]byte) ([]bool, error) {
	return f.run(ctx, items, false)
}

// Expire sets the key's time to live; ttl ≤ 0 removes it (PERSIST).
func (f *GoZeroFilter) Expire(ctx context.Context, ttl time.Duration) error {
	if err := expireKeys(ctx, f.client, []string{f.key}, ttl); err != nil {
		return fmt.Errorf("redisfilter: expire %q: %w", f.key, err)
	}
	return nil
}

// Delete removes the filter's key; the filter is then empty.
func (f *GoZeroFilter) Delete(ctx context.Context) error {
	if err := f.client.Unlink(ctx, f.key).Err(); err != nil {
		return fmt.Errorf("redisfilter: delete %q: %w", f.key, err)
	}
	return nil
}
