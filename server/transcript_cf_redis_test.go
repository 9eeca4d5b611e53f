package server

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomery/bloom/internal/redistest"
)

// TestTranscriptCFRedisBackend replays cf.transcript (TestTranscriptCF's
// RedisBloom 8 recording) against the Redis backend, on one redis-server
// and on a 3-master cluster, RESP2 and RESP3: the cuckoo filters kept in
// Redis strings by redisfilter.Cuckoo answer every command as RedisBloom
// and the memory backend do, byte for byte (but RENAME, which the Redis
// backend does not have).
func TestTranscriptCFRedisBackend(t *testing.T) {
	redisOnly(t)
	backends := map[string]func(t *testing.T) string{
		"single": func(t *testing.T) string { return "redis://" + redistest.Start(t).Addr() },
		"cluster": func(t *testing.T) string {
			return "redis+cluster://" + strings.Join(redistest.StartCluster(t).Addrs(), ",")
		},
	}
	noRename := "the Redis backend has no RENAME"
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			skip := map[string]string{"rename keeps the filter": noRename, "rename over a bloom filter": noRename,
				"rename a bloom filter over a cuckoo filter": noRename, "rename to itself": noRename,
				"rename a missing key": noRename}
			if name == "cluster" {
				oneMaster := "a cluster's SCAN cursor visits one master per call (redisStore.Scan)"
				skip["scan by type"], skip["scan by type and pattern"] = oneMaster, oneMaster
			}
			counts := replayTranscript(t, transcriptReplay{file: "cf.transcript", cfg: Config{Backend: backend(t)}, skip: skip})
			if counts.layout != 0 || counts.shape != 2 || len(counts.cases) != 0 || counts.exact < 2*400 {
				t.Errorf("cf.transcript: %+v; want every reply compared exactly but the two PTTLs (TestTranscriptCF)", counts)
			}
		})
	}
}

// The keyspace commands see cuckoo filters on the Redis backend as on the
// memory one: EXISTS, TYPE, the expiry family (every key of the filter
// expires with it), DBSIZE and DEL, which removes all its keys.
func TestCFKeysRedisBackend(t *testing.T) {
	red := redistest.Start(t)
	_, addr := startServer(t, Config{Backend: "redis://" + red.Addr()})
	c, raw := dialRaw(t, addr), dialRaw(t, red.Addr())
	var pttls []string // within 10 seconds of 100
	for ms := 90000; ms <= 100000; ms++ {
		pttls = append(pttls, ":"+strconv.Itoa(ms)+"\r\n")
	}
	for _, step := range []struct{ args, want []string }{
		{[]string{"CF.ADD", "k", "a"}, []string{":1\r\n"}},
		{[]string{"EXISTS", "k"}, []string{":1\r\n"}},
		{[]string{"TYPE", "k"}, []string{"+MBbloomCF\r\n"}},
		{[]string{"EXPIRE", "k", "100"}, []string{":1\r\n"}},
		{[]string{"TTL", "k"}, []string{":100\r\n", ":99\r\n"}},
		{[]string{"PTTL", "k"}, pttls},
		{[]string{"PERSIST", "k"}, []string{":1\r\n"}},
		{[]string{"TTL", "k"}, []string{":-1\r\n"}},
		{[]string{"DBSIZE"}, []string{":1\r\n"}},
		{[]string{"DEL", "k"}, []string{":1\r\n"}},
		{[]string{"EXISTS", "k"}, []string{":0\r\n"}},
	} {
		got := c.do(step.args...)
		if !slices.Contains(step.want, got) {
			t.Errorf("%q: %q, want one of %q", step.args, got, step.want)
		}
	}
	if got := raw.do("DBSIZE"); got != ":0\r\n" {
		t.Errorf("Redis holds %q keys after DEL, want none", got)
	}
}
