package redisfilter

import (
	"strconv"
	"testing"
)

// FuzzParseCuckooMeta: whatever a cuckoo filter's metadata hash holds,
// parsing it never panics, and what it accepts is a geometry the scripts
// can work with: a power-of-two bucket count, bucket size 1 to 255, at
// least one sub-filter, and at most cuckooMaxBytes bytes.
func FuzzParseCuckooMeta(f *testing.F) {
	f.Add("0", "512", "0", "1", "2", "20", "1")
	f.Add("7", "4", "2", "3", "2", "20", "3")
	f.Add("1", "1099511627776", "0", "1", "255", "1", "0")
	f.Add("-1", "x", "", "65537", "0", "65536", "99999")
	f.Fuzz(func(t *testing.T, items, buckets, deletes, filters, bs, mi, exp string) {
		h := map[string]string{"items": items, "buckets": buckets, "deletes": deletes, "filters": filters,
			"bucketsize": bs, "maxiter": mi, "expansion": exp}
		in, err := parseCuckooMeta(h)
		if err != nil {
			return
		}
		if in.Buckets == 0 || in.Buckets&(in.Buckets-1) != 0 || in.BucketSize < 1 || in.BucketSize > 255 ||
			in.Filters < 1 || in.Bytes() > cuckooMaxBytes {
			t.Fatalf("accepted %v as %+v", h, in)
		}
		if again, err := parseCuckooMeta(map[string]string{"items": strconv.FormatUint(in.Items, 10), "buckets": buckets,
			"deletes": deletes, "filters": filters, "bucketsize": bs, "maxiter": mi, "expansion": exp}); err != nil || again != in {
			t.Fatalf("%+v does not read back: %+v, %v", in, again, err)
		}
	})
}
