module github.com/bloomery/bloom/bench

go 1.26.0

replace github.com/bloomery/bloom => ../

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomery/bloom v0.0.0-00010101000000-000000000000
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/greatroar/blobloom v0.8.1
	github.com/tylertreat/BoomFilters v0.0.0-20251001182300-5b3723cc64ae
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/d4l3k/messagediff v1.2.1 // indirect
	github.com/dchest/siphash v1.2.3 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
