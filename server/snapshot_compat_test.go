package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

// compatExpiry is the expiry of compatKeyspace's key "ttl": 2100-01-01.
const compatExpiry = 4102444800000

// compatKeyspace fills m with the keys of testdata/snapshot-v1.bdb, the
// snapshot the version-1 writer (0d50abe's) made of them (compatKeyspace
// on a new persistence, then SAVE: snapshot.2.bdb): small default
// filters (one shape in version 2), two small filters of other
// parameters (a second shape, and a non-scaling one), a grown filter,
// a cuckoo filter, an expiring key.
func compatKeyspace(t testing.TB, m *memstore) {
	t.Helper()
	ctx := context.Background()
	for _, k := range nItems("small", 5) {
		mustAdd(t, m, k, nItems(k, 3)...)
	}
	for k, o := range map[string]createOpts{
		"reserved":    {rate: 0.001, capacity: 500, expansion: 4},
		"non-scaling": {rate: 0.05, capacity: 50, nonScaling: true},
	} {
		if err := m.Reserve(ctx, k, o); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, m, k, nItems(k, 20)...)
	}
	mustAdd(t, m, "grown", nItems("grown", 300)...)
	mustAddCuckoo(t, m, "cuckoo", nItems("cuckoo", 100)...)
	mustAdd(t, m, "ttl", "x")
	if _, err := m.PExpireAt(ctx, "ttl", compatExpiry, expireAlways); err != nil {
		t.Fatal(err)
	}
}

// A version-1 snapshot loads into the keyspace it was written from, and
// the version-2 snapshot of that keyspace weighs what the version-1 file
// takes on disk.
func TestSnapshotV1Loads(t *testing.T) {
	v1, err := os.ReadFile(filepath.Join("testdata", "snapshot-v1.bdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, snapshotName(2)), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	compatKeyspace(t, m)
	want := storeState(m)
	if got := storeState(bareStore(t, dir, 2)); got != want {
		t.Fatalf("the version-1 snapshot loads as\n%s\nwant\n%s", got, want)
	}
	v2, weight := saveSnapshot(t, p)
	recs := snapRecords(t, v2)
	if got, want := tagCounts(recs), "B8 C1 K1 S3"; got != want {
		t.Fatalf("version-2 records %s, want %s", got, want)
	}
	if weight != int64(len(v1)) {
		t.Fatalf("the version-2 snapshot (%d bytes) weighs %d, the version-1 file is %d bytes", len(v2), weight, len(v1))
	}
	if len(v2) >= len(v1) {
		t.Fatalf("the version-2 snapshot is %d bytes, the version-1 %d", len(v2), len(v1))
	}
	if got := storeState(bareStore(t, p.dir, p.snapGen.Load())); got != want {
		t.Fatalf("the version-2 snapshot loads as\n%s\nwant\n%s", got, want)
	}
	got, err := p.loadSnapshot(p.snapGen.Load(), newReplayer(newLoadingMemstore(0), testCommands()))
	if err != nil || got.weight != weight || got.size != int64(len(v2)) {
		t.Fatalf("loaded weight %d, size %d (%v); written %d, %d", got.weight, got.size, err, weight, len(v2))
	}
}

// Past maxSnapShapes shapes, small filters are written whole.
func TestSnapshotShapesLimit(t *testing.T) {
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	for i := range maxSnapShapes + 10 {
		k := fmt.Sprint("k", i)
		if err := m.Reserve(context.Background(), k, createOpts{rate: 0.01, capacity: uint64(100 + i), expansion: 2}); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, m, k, k)
	}
	b, _ := saveSnapshot(t, p)
	if got, want := tagCounts(snapRecords(t, b)), fmt.Sprintf("B%d K10 S%d", maxSnapShapes, maxSnapShapes); got != want {
		t.Fatalf("records %s, want %s", got, want)
	}
	if got, want := storeState(bareStore(t, p.dir, p.snapGen.Load())), storeState(m); got != want {
		t.Fatal("the snapshot loads to another keyspace")
	}
}

// Damaged shapes and states are refused with what is wrong, never a
// panic; each file is resealed (its checksums made right) so that the
// check at fault is the one named.
func TestSnapshotShapesRefused(t *testing.T) {
	m, p := openTestPersistence(t, t.TempDir(), "everysec")
	defer p.close()
	compatKeyspace(t, m)
	good, _ := saveSnapshot(t, p)
	first := func(tag byte) snapRecord {
		for _, r := range snapRecords(t, good) {
			if r.tag == tag {
				return r
			}
		}
		t.Fatalf("no %q record", tag)
		return snapRecord{}
	}
	recs := snapRecords(t, good)
	shape, state := first(tagShape), first(tagState)
	stateID := state.off + 1 + 4 + len(state.key) + 8
	cases := []struct {
		name, want string
		edit       func(b []byte)
	}{
		{"shape id out of order", "shape 7 where shape 0 comes next", func(b []byte) { le.PutUint32(b[shape.off+1:], 7) }},
		{"shape length", "not 192", func(b []byte) { le.PutUint32(b[shape.off+5:], 191) }},
		{"shape's header", "bloom", func(b []byte) { b[shape.off+9+30] ^= 1 }},
		{"unknown shape", "shape 9, of 1 written before it", func(b []byte) { le.PutUint32(b[stateID:], 9) }},
		{"count above capacity", "bloom", func(b []byte) { le.PutUint64(b[stateID+4:], 1<<40) }},
		{"version 1", "unknown record tag 0x53 in a version-1 snapshot", func(b []byte) { le.PutUint32(b[8:], 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(good)
			c.edit(b)
			reseal(b, recs)
			dir, gen := t.TempDir(), le.Uint64(b[16:])
			if err := os.WriteFile(filepath.Join(dir, snapshotName(gen)), b, 0o644); err != nil {
				t.Fatal(err)
			}
			m := newLoadingMemstore(0)
			lp := &persistence{ks: m.ks, dir: dir, log: p.log}
			_, err := lp.loadSnapshot(gen, newReplayer(m, testCommands()))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("loading: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// saveSnapshot makes a snapshot of p (SAVE) and returns its bytes and
// weight.
func saveSnapshot(t *testing.T, p *persistence) ([]byte, int64) {
	t.Helper()
	if err := p.save(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(p.dir, snapshotName(p.snapGen.Load())))
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return b, p.snapWeight
}

// snapRecord is a record of a snapshot file, as snapRecords finds it.
type snapRecord struct {
	tag      byte
	off, end int // its bytes, b[off:end], the CRC last
	key      string
}

// snapRecords splits a snapshot's bytes into its records, by the
// layout of snapshot.go and snapshot_shapes.go, checking nothing but
// the shapes' encodings (for the states' lengths).
func snapRecords(t *testing.T, b []byte) []snapRecord {
	t.Helper()
	var recs []snapRecord
	var states []int
	u32 := func(at int) int { return int(binary.LittleEndian.Uint32(b[at:])) }
	for off := snapHeaderLen; b[off] != tagEnd; {
		r := snapRecord{tag: b[off], off: off}
		switch r.tag {
		case tagKey, tagCuckoo, tagState:
			klen := u32(off + 1)
			r.key = string(b[off+5 : off+5+klen])
			at := off + 5 + klen + 8
			if r.tag == tagState {
				r.end = at + 4 + states[u32(at)] + 4
			} else {
				r.end = at + 8 + int(binary.LittleEndian.Uint64(b[at:])) + 4
			}
		case tagShape:
			l, err := bloom.NewStateLoader(b[off+9 : off+9+u32(off+5)])
			if err != nil {
				t.Fatal(err)
			}
			states = append(states, l.StateSize())
			r.end = off + 9 + u32(off+5) + 4
		default:
			t.Fatalf("record tag %#x at %d", r.tag, off)
		}
		recs = append(recs, r)
		off = r.end
	}
	return recs
}

// tagCounts is the number of records of each tag, as "B2 K1 S1".
func tagCounts(recs []snapRecord) string {
	n := map[byte]int{}
	for _, r := range recs {
		n[r.tag]++
	}
	var out []string
	for _, tag := range []byte{tagState, tagCuckoo, tagKey, tagShape} {
		if n[tag] > 0 {
			out = append(out, fmt.Sprintf("%c%d", tag, n[tag]))
		}
	}
	return strings.Join(out, " ")
}

// reseal recomputes the CRCs of a snapshot's records (recs, as
// snapRecords found them before an edit that kept their lengths) and
// of its trailer.
func reseal(b []byte, recs []snapRecord) {
	var end int
	for _, r := range recs {
		binary.LittleEndian.PutUint32(b[r.end-4:], crc32.Checksum(b[r.off:r.end-4], castagnoli))
		end = r.end
	}
	binary.LittleEndian.PutUint32(b[end+9:], crc32.Checksum(b[:end+9], castagnoli))
}
