module github.com/bloomery/bloom

go 1.26

require (
	github.com/dchest/siphash v1.2.3
	github.com/spf13/cobra v1.10.2
	github.com/zeebo/xxh3 v1.1.0
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
