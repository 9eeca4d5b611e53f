package cuckoo

import "math"

// SubFilter describes one sub-filter, for tools that describe a filter.
type SubFilter struct {
	Buckets  uint64 // buckets of BucketSize slots
	Occupied uint64 // slots that hold a fingerprint
}

// SubFilters describes the sub-filters, oldest first. It reads all of the
// filter's memory.
func (f *Filter) SubFilters() []SubFilter {
	out := make([]SubFilter, len(f.subs))
	for i, s := range f.subs {
		n := uint64(0)
		for _, c := range s.data {
			if c != 0 {
				n++
			}
		}
		out[i] = SubFilter{Buckets: s.nb, Occupied: n}
	}
	return out
}

// EstimatedFPR is the false-positive rate of the filter as it is: an
// absent item tests present when one of the 2·BucketSize slots of its two
// buckets in some sub-filter holds its fingerprint, one of 255 values;
// with the slots of sub-filter i occupied at the ratio L_i, that is
// 1 − Π_i (1 − 1/255)^(2·BucketSize·L_i). It reads all of the filter's
// memory.
func (f *Filter) EstimatedFPR() float64 {
	miss := 1.0
	for _, s := range f.SubFilters() {
		load := float64(s.Occupied) / float64(s.Buckets*f.bucketSize)
		miss *= math.Pow(1-1.0/255, 2*float64(f.bucketSize)*load)
	}
	return 1 - miss
}
