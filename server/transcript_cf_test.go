package server

import "testing"

// TestTranscriptCF replays cf.transcript, the CF.* commands recorded from
// RedisBloom 8 (every command, option, limit and error; fills until
// growth and until "Filter is full"; deletes and compaction; SCANDUMP →
// LOADCHUNK round trips), in RESP2 and RESP3 against the memory backend:
// every reply is compared, the cuckoo filter having RedisBloom's one
// layout, except the PTTL of "expire and ttl" (a millisecond may pass
// after its PEXPIRE), compared by shape in both protocols. (The CF.*
// cases of bf_wrongtype.transcript run in TestTranscriptBF.)
func TestTranscriptCF(t *testing.T) {
	counts := replayTranscript(t, transcriptReplay{file: "cf.transcript"})
	if counts.layout != 0 || counts.shape != 2 || len(counts.cases) != 0 || counts.exact < 2*400 {
		t.Errorf("cf.transcript: %+v; want every reply compared exactly but the two PTTLs", counts)
	}
}
