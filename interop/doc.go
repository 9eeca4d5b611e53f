// Package interop holds tests that run Bloomery against other libraries
// over the same data, so that those libraries never become dependencies
// of the main module: this directory is a module of its own.
//
// gozero_test.go checks that redisfilter.GoZeroFilter and go-zero's
// core/bloom (github.com/zeromicro/go-zero) read and write the same bits
// of one Redis key, against a real redis-server, and benchmarks the two.
//
// rueidis_test.go runs rueidis (github.com/redis/rueidis), with its
// default options (RESP3, client-side caching), against bloomery serve:
// its connection setup, its Bloom filter commands, a dump and reload, and
// a cached read invalidated by another client's write.
//
// cuckoo_redisbloom_test.go moves cuckoo filters of 10⁶ items between a
// real RedisBloom ($BLOOMERY_REDISBLOOM) and bloomery serve with
// CF.SCANDUMP and CF.LOADCHUNK, both ways, and compares the servers'
// CF.INFO, CF.MEXISTS and CF.COUNT replies byte for byte, through the
// raw pipelines of pipeline_test.go.
package interop
