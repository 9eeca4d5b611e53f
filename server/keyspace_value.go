package server

import (
	"unsafe"

	"github.com/bloomery/bloom"
)

// A small Bloom filter's value in one object (docs/DESIGN.md, "Values"):
// its entry, its bloom.Scalable, the first sub-filter's bit array and the
// key's bytes, so that a key made by BF.ADD is one heap object, which the
// slot holding it points into twice (its key string and its entry).
// A collection then marks one object per key where it marked four (key,
// entry, filter, bit array) and follows no pointer out of it but to
// the filter's shared parameters and grow hook; creating the key is one
// allocation. The entry's filter points into the same object, so the
// rest of the server sees an entry as any other.
//
// The object's size is a size class of Go's allocator (the tail is sized
// to fill it), so it takes no more than the four objects did: 288 bytes
// for BF.ADD's default filter (152 bytes of bits) and a key of up to 24
// bytes, as 16 + 96 + 160 + 16 before. A bit array in the blocked layout
// (which must start on a cache line), or one that does not fit the
// largest class, is allocated apart (bloom.ScalableMaker.New).

// bloomValue is a value with a tail of type T, an array of uint64: the
// bit array, then the key's bytes.
type bloomValue[T any] struct {
	entry
	sc   bloom.Scalable
	tail T
}

// valueHeader is the size of a bloomValue before its tail.
const valueHeader = unsafe.Sizeof(entry{}) + unsafe.Sizeof(bloom.Scalable{})

// newValue allocates a bloomValue with tail T and returns its entry
// (whose filter is the value's zero Scalable) and its tail.
func newValue[T any]() (*entry, []uint64) {
	v := new(bloomValue[T])
	v.filter = &v.sc
	return &v.entry, unsafe.Slice((*uint64)(unsafe.Pointer(&v.tail)), unsafe.Sizeof(v.tail)/8)
}

// valueAllocs allocate the bloomValues whose sizes are Go's size classes
// from 128 to 1024 bytes (valueHeader + 8·words; TestValueSizes), by
// the words of their tails, ascending.
var valueAllocs = [...]struct {
	words int
	alloc func() (*entry, []uint64)
}{
	{2, newValue[[2]uint64]}, {4, newValue[[4]uint64]}, {6, newValue[[6]uint64]},
	{8, newValue[[8]uint64]}, {10, newValue[[10]uint64]}, {12, newValue[[12]uint64]},
	{14, newValue[[14]uint64]}, {16, newValue[[16]uint64]}, {18, newValue[[18]uint64]},
	{22, newValue[[22]uint64]}, {26, newValue[[26]uint64]}, {30, newValue[[30]uint64]},
	{34, newValue[[34]uint64]}, {38, newValue[[38]uint64]}, {42, newValue[[42]uint64]},
	{46, newValue[[46]uint64]}, {50, newValue[[50]uint64]}, {58, newValue[[58]uint64]},
	{66, newValue[[66]uint64]}, {74, newValue[[74]uint64]}, {82, newValue[[82]uint64]},
	{98, newValue[[98]uint64]}, {114, newValue[[114]uint64]},
}

// maxTailWords is the largest tail a value may have.
const maxTailWords = 114

// valueFor[w] is the index in valueAllocs of the smallest tail of at
// least w words.
var valueFor = func() (t [maxTailWords + 1]uint8) {
	i := 0
	for w := range t {
		for valueAllocs[i].words < w {
			i++
		}
		t[w] = uint8(i)
	}
	return t
}()

// valueBatch is how many values of a size a shard allocates at a time.
//
// A collection marks a value through the slot that holds it, in the
// order of the shard's slot array, and finding the span of a value costs
// a cache and TLB miss when the last value's span was another. Values
// made one at a time lie in the order of their creation across all 64
// shards, so consecutive slots of a shard point into different spans;
// values made in batches for a shard lie mostly in the same span, as its
// slots do. A full collection of 1.6 M keys took 340 ms of CPU with
// values made one at a time, 310 with batches of 8, about 260 with 16
// or 32 (issue 11). Each value is still an object of its own: the batch
// does not tie their lives together. A shard holds at most valueBatch−1
// values not yet used per size it has made: 4.5 KiB for BF.ADD's
// default filter, 288 KiB over the 64 shards.
const valueBatch = 16

// shardValues are the values a shard has allocated and not yet used, by
// size (valueAllocs); they are used under the shard's lock.
type shardValues [len(valueAllocs)]*valueBatchOf

// valueBatchOf is a shard's batch of one size, refilled in place.
type valueBatchOf struct {
	next int
	vals [valueBatch]spareValue
}

// spareValue is a value allocated and not yet used: its entry and tail.
type spareValue struct {
	e    *entry
	tail []uint64
}

// take returns an unused value of size i, allocating a batch when there
// is none.
func (sv *shardValues) take(i int) (*entry, []uint64) {
	b := sv[i]
	if b == nil {
		b = &valueBatchOf{next: valueBatch}
		sv[i] = b
	}
	if b.next == valueBatch {
		for j := range b.vals {
			b.vals[j].e, b.vals[j].tail = valueAllocs[i].alloc()
		}
		b.next = 0
	}
	v := b.vals[b.next]
	b.vals[b.next] = spareValue{}
	b.next++
	return v.e, v.tail
}

// newBloomEntry makes the value of a new filter made by m under key,
// taking it from sv, the values of key's shard (the caller holds its
// lock): the entry, and the key as the keyspace is to store it (its
// bytes in the value when they fit there). The filter is empty and has
// no grow hook.
func newBloomEntry(m *bloom.ScalableMaker, key string, sv *shardValues) (*entry, string) {
	if !fitsValue(m.FirstSizing(), key) {
		return &entry{filter: m.New()}, key
	}
	e, bits, stored := sv.inValue(m.Words(), key)
	if err := m.Init(e.filter, bits); err != nil {
		panic("server: a filter in its value: " + err.Error()) // the length is the maker's, the layout not blocked
	}
	return e, stored
}

// fitsValue reports whether a filter whose first sub-filter has
// geometry sz goes in a value with key: its bits and the key's bytes fit
// the largest tail, and the bits need not start on a cache line (not
// the blocked layout, whose blocks are cache lines).
func fitsValue(sz bloom.Sizing, key string) bool {
	return sz.Layout != bloom.Blocked && valueTail(int(sz.Bits/64), key) <= maxTailWords
}

// valueTail is the words of tail a value needs for a bit array of words
// words and key.
func valueTail(words int, key string) int { return words + (len(key)+7)/8 }

// inValue takes from sv a value for a bit array of words words and key,
// which fit (fitsValue): its entry (whose filter is the value's zero
// Scalable), the bit array in its tail, and the key as the keyspace is
// to store it, its bytes after the bits.
func (sv *shardValues) inValue(words int, key string) (*entry, []uint64, string) {
	e, tail := sv.take(int(valueFor[valueTail(words, key)]))
	bits := tail[:words:words]
	if len(key) == 0 {
		return e, bits, key
	}
	kb := unsafe.Slice((*byte)(unsafe.Pointer(&tail[words])), len(key))
	copy(kb, key)
	return e, bits, unsafe.String(&kb[0], len(kb))
}
