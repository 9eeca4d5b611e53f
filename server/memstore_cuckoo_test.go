package server

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom/cuckoo"
)

// TestCuckooBytes: cuckooBytes, what createCuckoo charges before
// allocating, is what cuckoo.New allocates.
func TestCuckooBytes(t *testing.T) {
	for _, o := range []cuckooOpts{defaultCuckoo, {4, 2, 1, 1}, {5, 2, 1, 0}, {1025, 2, 1, 1}, {1026, 2, 1, 1},
		{13, 6, 1, 1}, {1000, 255, 1, 1}, {1 << 20, 3, 1, 1}} {
		f, err := cuckoo.New(o.capacity, cuckoo.WithBucketSize(o.bucketSize))
		if err != nil {
			t.Fatal(err)
		}
		if got := cuckooBytes(o); got != f.Bytes() {
			t.Errorf("%+v: cuckooBytes %d, cuckoo.New allocates %d", o, got, f.Bytes())
		}
	}
}

// TestCuckooMemoryLimits: the per-filter limit and the total budget hold
// for cuckoo filters as for Bloom filters: creation, growth and dump
// headers are refused past them, nothing is allocated, and the budget
// counts every byte, freed by compaction and deletion.
func TestCuckooMemoryLimits(t *testing.T) {
	ctx := context.Background()
	m := newMemstore(16384, 6144)
	cf := memCuckoo{m}
	o := defaultCuckoo
	o.capacity = 1 << 30
	if err := cf.Reserve(ctx, "huge", o); !errors.Is(err, errNoMemory) {
		t.Fatalf("a 1 GiB filter under a 16 KiB limit: %v", err)
	}
	o = cuckooOpts{capacity: 1024, bucketSize: 2, maxIterations: 20, expansion: 1}
	for _, k := range []string{"a", "b"} {
		if err := cf.Reserve(ctx, k, o); err != nil {
			t.Fatal(err)
		}
	}
	if used := m.Stats().FilterBytes; used != 2048 {
		t.Fatalf("budget counts %d bytes for two 1 KiB filters", used)
	}
	// Growth: 1 KiB per sub-filter; the budget (6 KiB) stops "a" at 5.
	its := make([][]byte, 8000)
	for i := range its {
		its[i] = []byte("item" + strconv.Itoa(i))
	}
	res := make([]cuckoo.Status, len(its))
	if err := cf.Add(ctx, "a", its, cuckooAdd{}, res); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res, cuckoo.GrowFailed) {
		t.Fatal("no item failed for lack of memory")
	}
	in, _ := cf.Info(ctx, "a")
	if used := m.Stats().FilterBytes; used != 6144 || in.Filters != 5 {
		t.Fatalf("budget counts %d bytes; a has %d sub-filters", used, in.Filters)
	}
	hdr := make([]byte, cuckoo.DumpHeaderSize)
	hdr[8], hdr[24], hdr[32], hdr[34], hdr[36] = 0, 1, 2, 20, 1
	hdr[9] = 4 // 1024 buckets of 2: over what is left
	if err := cf.LoadChunk(ctx, "c", 1, hdr); !errors.Is(err, errNoMemory) {
		t.Fatalf("a header past the budget: %v", err)
	}
	// Deletes compact "a": freed sub-filters go back to the budget.
	for _, it := range its {
		cf.Delete(ctx, "a", it)
	}
	cf.Compact(ctx, "a")
	in, _ = cf.Info(ctx, "a")
	if used := m.Stats().FilterBytes; in.Filters != 1 || used != 2048 {
		t.Fatalf("after deleting everything: %d sub-filters, %d bytes counted", in.Filters, used)
	}
	m.Delete(ctx, []string{"a", "b"})
	if used := m.Stats().FilterBytes; used != 0 {
		t.Fatalf("%d bytes counted with no keys", used)
	}
}

// TestCFReserveHugeOverTheWire: CF.RESERVE of 2^60 is refused with
// RedisBloom 8's range error (RedisBloom itself aborts on Redis 7.0), and
// one within the range but over --maxmemory-per-filter with RedisBloom's
// memory error; INFO's filter_bytes counts cuckoo filters.
func TestCFReserveHugeOverTheWire(t *testing.T) {
	_, addr := startServer(t, Config{MaxFilterBytes: 1 << 20})
	c := dialRaw(t, addr)
	if got := c.do("CF.RESERVE", "k", "1152921504606846976"); got != "-Capacity must be in the range [2 * BUCKETSIZE, 1073741824]\r\n" {
		t.Errorf("CF.RESERVE 2^60: %q", got)
	}
	if got := c.do("CF.RESERVE", "k", "1073741824"); got != "-ERR Insufficient memory to create filter\r\n" {
		t.Errorf("CF.RESERVE 2^30 over a 1 MiB limit: %q", got)
	}
	c.do("CF.RESERVE", "k", "1000000", "BUCKETSIZE", "1")
	if info := c.do("INFO", "memory"); !strings.Contains(info, "filter_bytes:1048576\r\n") {
		t.Errorf("INFO after a 1 MiB cuckoo filter:\n%s", info)
	}
}
