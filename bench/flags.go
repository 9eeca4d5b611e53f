package bench

import (
	"flag"
	"fmt"
)

// PairFlags are the flags shared by the commands that compare one of our
// filters with one peer (cmd/scalable, cmd/counting): -n, -p, -reps,
// -queries, -probes and -seed, with the same defaults. Parse fills the
// exported fields.
type PairFlags struct {
	Ns      []uint64  // key counts
	Ps      []float64 // target false-positive rates
	Reps    int       // timed passes over each query set
	Queries int       // query keys per pass
	Probes  uint64    // minimum never-inserted keys probed for the rate
	Seed    uint64    // seed of all key sets

	n, p            *string
	reps            *int
	queries, probes *float64
	seed            *uint64
}

// NewPairFlags defines the shared flags on flag.CommandLine; nUsage says
// what -n is to the command, in brackets after "comma-separated key
// counts".
func NewPairFlags(nUsage string) *PairFlags {
	return &PairFlags{
		n:       flag.String("n", "1e6,1e7", "comma-separated key counts `n` ("+nUsage+")"),
		p:       flag.String("p", "0.01,0.001", "comma-separated target false-positive rates `p`"),
		reps:    flag.Int("reps", 5, "timed passes over each query set"),
		queries: flag.Float64("queries", 2e6, "query keys per pass, half present and half absent"),
		probes:  flag.Float64("probes", 1e6, "minimum never-inserted keys probed for the rate (at least 100/p are)"),
		seed:    flag.Uint64("seed", 1, "random seed for all key sets"),
	}
}

// Parse checks and reads the flags' values; call it after flag.Parse.
func (f *PairFlags) Parse() error {
	var err error
	if f.Ns, err = ParseCounts(*f.n); err != nil {
		return err
	}
	if f.Ps, err = ParseRates(*f.p); err != nil {
		return err
	}
	if *f.reps < 1 || *f.queries < 2 || *f.probes < 0 {
		return fmt.Errorf("-reps must be at least 1, -queries at least 2 and -probes at least 0")
	}
	f.Reps, f.Queries, f.Probes, f.Seed = *f.reps, int(*f.queries), uint64(*f.probes), *f.seed
	return nil
}
