package cuckoo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// Random runs of mixed commands, made the same from the same seed, played
// on a Filter here and on RedisBloom (module_ops_test.go), whose replies,
// CF.INFO and dump must agree byte for byte.

// opsRun is one run: a filter's parameters and the commands on it.
type opsRun struct {
	seed                                           uint64
	capacity, bucketSize, maxIterations, expansion uint64
	cmds                                           [][]string // CF.ADD, CF.ADDNX, CF.DEL, CF.COUNT, CF.EXISTS, CF.COMPACT without the key
}

// maxExpansions is RedisBloom's default cf-max-expansions: CF.ADD refuses
// an item once the filter has this many sub-filters.
const maxExpansions = 32

// opsRuns is the number of random runs compared.
const opsRuns = 500

// makeRun makes run seed: small filters, so that they kick, grow and
// compact, and a small set of items, so that items repeat.
func makeRun(seed uint64) opsRun {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	bs := []uint64{1, 2, 2, 2, 3, 4, 4, 6, 8, 1 + r.Uint64N(255)}[r.IntN(10)]
	run := opsRun{
		seed:          seed,
		bucketSize:    bs,
		capacity:      2*bs + r.Uint64N(64*bs+64),
		maxIterations: []uint64{1, 2, 5, 20, 20, 1 + r.Uint64N(60)}[r.IntN(6)],
		expansion:     []uint64{0, 1, 1, 1, 2, 2, 3, 4}[r.IntN(8)],
	}
	universe := 1 + r.IntN(int(min(run.capacity, 400))*2)
	names := []string{"CF.ADD", "CF.ADD", "CF.ADD", "CF.ADDNX", "CF.ADDNX", "CF.DEL", "CF.DEL", "CF.DEL", "CF.COUNT", "CF.EXISTS"}
	n := 1 + r.IntN(400)
	for range n {
		if r.IntN(100) == 0 {
			run.cmds = append(run.cmds, []string{"CF.COMPACT"})
			continue
		}
		run.cmds = append(run.cmds, []string{names[r.IntN(len(names))], "i" + strconv.Itoa(r.IntN(universe))})
	}
	return run
}

// newRunFilter makes the filter of a run, as CF.RESERVE does.
func (run opsRun) newFilter() (*Filter, error) {
	return New(run.capacity, WithBucketSize(run.bucketSize), WithMaxIterations(run.maxIterations), WithExpansion(run.expansion))
}

// reply is what RedisBloom answers cmd on f, as go-redis renders it: an
// integer, OK, or an error's text.
func reply(f *Filter, cmd []string) string {
	switch cmd[0] {
	case "CF.COMPACT":
		f.Compact()
		return "OK"
	case "CF.COUNT":
		return strconv.FormatUint(f.CountString(cmd[1]), 10)
	case "CF.EXISTS":
		return boolReply(f.TestString(cmd[1]))
	case "CF.DEL":
		return boolReply(f.DeleteString(cmd[1]))
	}
	if f.Filters() >= maxExpansions {
		return "Maximum expansions reached"
	}
	var (
		added = true
		err   error
	)
	if cmd[0] == "CF.ADDNX" {
		added, err = f.AddUniqueString(cmd[1])
	} else {
		err = f.AddString(cmd[1])
	}
	switch {
	case errors.Is(err, ErrFull):
		return "Filter is full"
	case errors.Is(err, ErrTooLarge):
		return "ERR Insufficient memory"
	case err != nil:
		return err.Error()
	}
	return boolReply(added)
}

func boolReply(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// play plays run on a new filter and returns the replies and the filter,
// compacted at the end as the live run does.
func (run opsRun) play() ([]string, *Filter, error) {
	f, err := run.newFilter()
	if err != nil {
		return nil, nil, err
	}
	out := make([]string, len(run.cmds))
	for i, c := range run.cmds {
		out[i] = reply(f, c)
	}
	f.Compact()
	return out, f, nil
}

func (run opsRun) String() string {
	return fmt.Sprintf("seed %d: capacity %d bucket size %d max iterations %d expansion %d, %d commands",
		run.seed, run.capacity, run.bucketSize, run.maxIterations, run.expansion, len(run.cmds))
}

// digest condenses a run's outcome: its replies, CF.INFO and dump.
func digest(replies []string, info Info, dump []rbChunk) string {
	h := sha256.New()
	for _, r := range replies {
		fmt.Fprintf(h, "%s\n", r)
	}
	fmt.Fprintf(h, "%+v\n", info)
	for _, c := range dump {
		fmt.Fprintf(h, "%d %x\n", c.it, c.data)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// opsDigestsFile holds the digest of every run as RedisBloom played it
// (TestRandomRunsMatchRedisBloom -update writes it).
const opsDigestsFile = "testdata/redisbloom_ops.txt"

// readDigests reads the recorded digests: "seed digest" lines after
// comments.
func readDigests() (map[uint64]string, error) {
	b, err := os.ReadFile(opsDigestsFile)
	if err != nil {
		return nil, err
	}
	out := map[uint64]string{}
	for _, line := range strings.Split(string(b), "\n") {
		var seed uint64
		var d string
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		if _, err := fmt.Sscan(line, &seed, &d); err != nil {
			return nil, fmt.Errorf("%s: %q: %v", opsDigestsFile, line, err)
		}
		out[seed] = d
	}
	return out, nil
}
