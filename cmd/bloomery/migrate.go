package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// migrate copies Bloom and cuckoo filter keys between servers that
// speak BF.* and CF.* (RedisBloom, Redis 8, bloomery serve) through
// BF.SCANDUMP/BF.LOADCHUNK and CF.SCANDUMP/CF.LOADCHUNK: the bytes move,
// not the items, so a copy answers every query as its source does, false
// positives included.
func newMigrateCmd() *cobra.Command {
	var o migrateOptions
	cmd := &cobra.Command{
		Use:   "migrate SRC DST",
		Short: "Copy Bloom and cuckoo filter keys between RedisBloom, Redis 8 and bloomery servers",
		Long: `Copy every Bloom filter key (RedisBloom's type MBbloom--) and every
cuckoo filter key (MBbloomCF) matching --match from SRC to DST, with
BF.SCANDUMP and BF.LOADCHUNK (CF.SCANDUMP and CF.LOADCHUNK), keeping
each key's expiry. SRC and DST are servers that speak BF.* and CF.*:
RedisBloom, Redis 8 or bloomery serve, as
redis://[user:password@]host:port[/db], rediss://… or
bloomery://[user:password@]host:port.

Each key is loaded under a temporary name on DST and renamed over its
name only when whole, so an interrupted run leaves no half-copied key:
run it again and it copies what is missing. A key DST already holds
with the same dump is skipped ("already there"); one that differs is a
conflict, left alone unless --replace.

Then a verification pass (unless --verify=false) checks every copied
key: BF.INFO (CF.INFO) equal on both sides, and --probes random items
answering the same on both, false positives included.

Keys of other types are skipped and counted by type. A filter made by
bloomery serve in its own layout cannot be loaded by RedisBloom: its
BF.LOADCHUNK refuses the dump, and the report says so; filters in
RedisBloom's layout (loaded from RedisBloom, or made with bloomery serve
--filter-layout redisbloom) move both ways, as every cuckoo filter does.`,
		Example: `  # From RedisBloom (or Redis 8) into bloomery serve, then check:
  bloomery migrate redis://127.0.0.1:6379/0 bloomery://127.0.0.1:6380

  # Only the keys of one prefix, overwriting what differs:
  bloomery migrate --match 'feed:*' --replace redis://old:6379 bloomery://new:6380`,
		Args: exactArgs(2, "SRC and DST servers"),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := parseServerURL("SRC", args[0])
			if err != nil {
				return err
			}
			dst, err := parseServerURL("DST", args[1])
			if err != nil {
				return err
			}
			if o.probes < 0 || o.scanCount <= 0 {
				return usageErrorf("--probes must be ≥ 0 and --scan-count > 0")
			}
			rep, err := runMigrate(cmd.Context(), cmd.ErrOrStderr(), src, dst, o)
			rep.print(cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if rep.failed > 0 || rep.verifyFailed > 0 {
				return &exitStatus{code: 1}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.match, "match", "*", "copy the keys matching this glob pattern (as SCAN MATCH)")
	f.BoolVar(&o.replace, "replace", false, "overwrite keys DST holds with other contents")
	f.BoolVar(&o.verify, "verify", true, "check every copied key afterwards: BF.INFO (CF.INFO) and --probes random items")
	f.IntVar(&o.probes, "probes", 1000, "random items the verification asks both sides about, per key")
	f.IntVar(&o.scanCount, "scan-count", 500, "COUNT of each SCAN on SRC")
	return cmd
}

// migrateOptions are migrate's flags.
type migrateOptions struct {
	match     string
	replace   bool
	verify    bool
	probes    int
	scanCount int
}

// migrateReport counts what migrate did.
type migrateReport struct {
	scanned      int            // keys SRC listed
	copied       int            // keys loaded on DST
	cuckoo       int            // of them cuckoo filters
	present      int            // keys DST already held, with the same dump
	conflicts    int            // keys DST holds with other contents (not --replace)
	vanished     int            // keys gone from SRC before they were read
	failed       int            // keys that could not be copied
	firstErr     string         // the first failure, for the report
	otherTypes   map[string]int // skipped keys by type
	bytes        int64          // dump bytes moved
	took         time.Duration  // the copy, without verification
	verified     int            // keys the verification checked
	verifyFailed int            // keys that answered differently
	verifyErr    string         // the first difference
}

func (r *migrateReport) fail(key string, err error) {
	r.failed++
	if r.firstErr == "" {
		r.firstErr = fmt.Sprintf("%q: %v", key, err)
	}
}

// print writes the report: one line per count that is not zero.
func (r *migrateReport) print(w io.Writer) {
	secs := max(r.took.Seconds(), 1e-9)
	fmt.Fprintf(w, "keys scanned:      %d\n", r.scanned)
	fmt.Fprintf(w, "copied:            %d (%.0f keys/s, %.2f MB/s, %s)\n", r.copied,
		float64(r.copied)/secs, float64(r.bytes)/1e6/secs, r.took.Round(time.Millisecond))
	if r.cuckoo > 0 {
		fmt.Fprintf(w, "of which cuckoo:   %d\n", r.cuckoo)
	}
	lines := []struct {
		n    int
		what string
	}{
		{r.present, "already there:     %d (same dump on DST)\n"},
		{r.conflicts, "conflicts:         %d (DST holds other contents; --replace overwrites them)\n"},
		{r.vanished, "vanished:          %d (deleted or expired on SRC meanwhile)\n"},
		{r.failed, "failed:            %d\n"},
	}
	for _, l := range lines {
		if l.n > 0 {
			fmt.Fprintf(w, l.what, l.n)
		}
	}
	if r.firstErr != "" {
		fmt.Fprintf(w, "first failure:     %s\n", r.firstErr)
	}
	for typ, n := range r.otherTypes {
		fmt.Fprintf(w, "skipped:           %d of type %s\n", n, typ)
	}
	if r.verified > 0 || r.verifyFailed > 0 {
		fmt.Fprintf(w, "verified:          %d, differing: %d\n", r.verified, r.verifyFailed)
	}
	if r.verifyErr != "" {
		fmt.Fprintf(w, "first difference:  %s\n", r.verifyErr)
	}
}
