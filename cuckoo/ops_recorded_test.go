package cuckoo

import "testing"

// The random runs of TestRandomRunsMatchRedisBloom give the replies,
// CF.INFO and dump that RedisBloom gave, as recorded in
// testdata/redisbloom_ops.txt: the same check without a module.
func TestRandomRunsMatchRecordedRedisBloom(t *testing.T) {
	recorded, err := readDigests()
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != opsRuns {
		t.Fatalf("%s has %d runs, want %d", opsDigestsFile, len(recorded), opsRuns)
	}
	for seed := range uint64(opsRuns) {
		run := makeRun(seed)
		replies, f, err := run.play()
		if err != nil {
			t.Fatalf("%v: %v", run, err)
		}
		if d := digest(replies, f.Info(), scanDump(f)); d != recorded[seed] {
			t.Errorf("%v: digest %s, RedisBloom's %s", run, d, recorded[seed])
		}
	}
}
