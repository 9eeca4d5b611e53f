package cuckoo

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/bloomery/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// Tests against a real RedisBloom: set BLOOMERY_REDISBLOOM to a module
// file (.so) that the installed redis-server can --loadmodule. Without it
// they skip; what they establish is also checked without a module
// against the digests recorded from one (testdata/redisbloom_ops.txt).

const redisBloomEnv = "BLOOMERY_REDISBLOOM"

// rbServer is a redis-server with RedisBloom loaded.
type rbServer struct {
	c   *redis.Client
	ctx context.Context
}

// startRedisBloom starts a redis-server with the module of
// $BLOOMERY_REDISBLOOM, or skips the test when it is not set.
func startRedisBloom(t *testing.T) *rbServer {
	t.Helper()
	path := os.Getenv(redisBloomEnv)
	if path == "" {
		t.Skipf("%s is not set: set it to a RedisBloom module (.so) to run this test against a real RedisBloom", redisBloomEnv)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", redisBloomEnv, err)
	}
	srv := redistest.Start(t, "--loadmodule", path)
	m := &rbServer{c: redis.NewClient(&redis.Options{Addr: srv.Addr(), Protocol: 2, ReadTimeout: 5 * time.Minute}), ctx: context.Background()}
	t.Cleanup(func() { m.c.Close() })
	return m
}

// do runs one command and fails the test on an error.
func (m *rbServer) do(t *testing.T, args ...any) any {
	t.Helper()
	v, err := m.c.Do(m.ctx, args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// pipe runs the commands in one pipeline and returns each one's reply as
// a string: the integer, or the error's text.
func (m *rbServer) pipe(t *testing.T, cmds [][]any) []string {
	t.Helper()
	p := m.c.Pipeline()
	res := make([]*redis.Cmd, len(cmds))
	for i, c := range cmds {
		res[i] = p.Do(m.ctx, c...)
	}
	p.Exec(m.ctx) // errors are per command
	out := make([]string, len(cmds))
	for i, r := range res {
		if v, err := r.Result(); err != nil {
			out[i] = err.Error()
		} else {
			out[i] = fmt.Sprint(v)
		}
	}
	return out
}

// rbChunk is one CF.SCANDUMP reply: the iterator it came back with and
// its data.
type rbChunk struct {
	it   int64
	data []byte
}

// scanDump is CF.SCANDUMP of key from iterator 0 until it answers 0.
func (m *rbServer) scanDump(t *testing.T, key string) []rbChunk {
	t.Helper()
	var out []rbChunk
	it := int64(0)
	for {
		v := m.do(t, "CF.SCANDUMP", key, it).([]any)
		it = v[0].(int64)
		if it == 0 {
			return out
		}
		out = append(out, rbChunk{it, []byte(v[1].(string))})
	}
}

// info is CF.INFO of key as an Info.
func (m *rbServer) info(t *testing.T, key string) Info {
	t.Helper()
	v := m.do(t, "CF.INFO", key).([]any)
	fields := map[string]int64{}
	for i := 0; i+1 < len(v); i += 2 {
		fields[v[i].(string)] = v[i+1].(int64)
	}
	u := func(name string) uint64 { return uint64(fields[name]) }
	return Info{
		Size: u("Size"), Buckets: u("Number of buckets"), Filters: u("Number of filters"),
		Items: u("Number of items inserted"), Deleted: u("Number of items deleted"),
		BucketSize: u("Bucket size"), Expansion: u("Expansion rate"), MaxIterations: u("Max iterations"),
	}
}

// scanDump is ScanDump of f from iterator 0 until it answers 0.
func scanDump(f *Filter) []rbChunk {
	var out []rbChunk
	for it := int64(0); ; {
		next, data := f.ScanDump(it)
		if next == 0 {
			return out
		}
		out = append(out, rbChunk{next, append([]byte(nil), data...)})
		it = next
	}
}
