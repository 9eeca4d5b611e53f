module github.com/bloomery/bloom

go 1.26.0

require (
	github.com/dchest/siphash v1.2.3
	github.com/redis/go-redis/v9 v9.23.0
	github.com/spaolacci/murmur3 v1.1.0
	github.com/spf13/cobra v1.10.2
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
