package bench

import (
	"github.com/bloomery/bloom/cuckoo"
	panmari "github.com/panmari/cuckoofilter"
	seiflotfy "github.com/seiflotfy/cuckoofilter"
)

// Names of the cuckoo filters NewCuckooLib knows.
const (
	OursCuckoo  = "bloomery-cuckoo"    // cuckoo.New(n): RedisBloom's defaults, buckets of 2 slots
	OursCuckoo4 = "bloomery-cuckoo-b4" // cuckoo.New(n, WithBucketSize(4), WithMaxIterations(500)): the peers' geometry
	SeiflotfyCF = "seiflotfy"          // github.com/seiflotfy/cuckoofilter NewFilter(n): 8-bit fingerprints, 4 slots
	PanmariCF   = "panmari"            // github.com/panmari/cuckoofilter NewFilter(n): 16-bit fingerprints, 4 slots
)

// CuckooLibNames lists the cuckoo filters, in the order timed.
var CuckooLibNames = []string{OursCuckoo, OursCuckoo4, SeiflotfyCF, PanmariCF}

// CuckooLib is one library's cuckoo filter. Every library is called
// through this interface, so each operation costs each library the same
// one indirect call.
type CuckooLib interface {
	Add(key []byte) bool    // false when the filter refused the key
	Test(key []byte) bool   // may be a false positive
	Delete(key []byte) bool // false when no copy was found
}

// NewCuckooLib makes library name's filter for n keys, or nil for an
// unknown name.
func NewCuckooLib(name string, n int) CuckooLib {
	switch name {
	case OursCuckoo, OursCuckoo4:
		var opts []cuckoo.Option
		if name == OursCuckoo4 {
			opts = []cuckoo.Option{cuckoo.WithBucketSize(4), cuckoo.WithMaxIterations(500)}
		}
		f, err := cuckoo.New(uint64(n), opts...)
		if err != nil {
			panic(err) // n is a benchmark's size, never out of range
		}
		return oursCuckoo{f}
	case SeiflotfyCF:
		return seiflotfyCuckoo{seiflotfy.NewFilter(uint(n))}
	case PanmariCF:
		return panmariCuckoo{panmari.NewFilter(uint(n))}
	}
	return nil
}

type oursCuckoo struct{ f *cuckoo.Filter }

func (o oursCuckoo) Add(key []byte) bool    { return o.f.Add(key) == nil }
func (o oursCuckoo) Test(key []byte) bool   { return o.f.Test(key) }
func (o oursCuckoo) Delete(key []byte) bool { return o.f.Delete(key) }

type seiflotfyCuckoo struct{ f *seiflotfy.Filter }

func (s seiflotfyCuckoo) Add(key []byte) bool    { return s.f.Insert(key) }
func (s seiflotfyCuckoo) Test(key []byte) bool   { return s.f.Lookup(key) }
func (s seiflotfyCuckoo) Delete(key []byte) bool { return s.f.Delete(key) }

type panmariCuckoo struct{ f *panmari.Filter }

func (p panmariCuckoo) Add(key []byte) bool    { return p.f.Insert(key) }
func (p panmariCuckoo) Test(key []byte) bool   { return p.f.Lookup(key) }
func (p panmariCuckoo) Delete(key []byte) bool { return p.f.Delete(key) }
