package main

import (
	"fmt"

	"github.com/bloomery/bloom/cuckoo"
)

// infoCuckoo describes a cuckoo filter (kind 4): RedisBloom's CF.INFO
// figures, then each sub-filter's load.
func infoCuckoo(t *infoTable, f *cuckoo.Filter) error {
	in := f.Info()
	t.row("kind", "cuckoo filter (kind 4, RedisBloom's CF.*), read into memory")
	t.row("hash", "MurmurHash64A, seed 0; 8-bit fingerprints")
	t.row("bucket size", "%d slots", in.BucketSize)
	t.row("buckets", "%d (sub-filter 0)", in.Buckets)
	t.row("sub-filters", "%d", in.Filters)
	t.row("expansion", "%d", in.Expansion)
	t.row("max iterations", "%d", in.MaxIterations)
	t.row("bytes", "%d (%s)", f.Bytes(), humanBytes(f.Bytes()))
	t.row("items", "%d (adds less deletes)", in.Items)
	t.row("deletes", "%d (since the last compaction)", in.Deleted)
	t.row("estimated rate now", "%s", formatRate(f.EstimatedFPR()))
	if err := t.tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(t.tw)
	fmt.Fprintln(t.tw, "sub-filter\tbuckets\tslots used")
	for i, s := range f.SubFilters() {
		slots := s.Buckets * in.BucketSize
		fmt.Fprintf(t.tw, "%d\t%d\t%d of %d (%.2f%%)\n", i, s.Buckets, s.Occupied, slots, 100*float64(s.Occupied)/float64(slots))
	}
	return nil
}
