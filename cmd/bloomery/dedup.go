package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/atomicfile"
	"github.com/spf13/cobra"
)

func newDedupCmd() *cobra.Command {
	var (
		n     = countValue(1_000_000)
		p     = rateValue(1e-6)
		state string
		nul   bool
	)
	cmd := &cobra.Command{
		Use:   "dedup [--state FILE] [-n N] [-p P] [-0] [FILE…]",
		Short: "Print each line the first time it is seen",
		Long: `dedup prints each line of the input files (standard input when there
are none, or for "-") the first time it appears and drops the repeats,
keeping the order, like awk '!seen[$0]++' but in a few bits per line:
the lines seen are kept in a scalable Bloom filter, which grows as they
arrive. The price is that a new line is dropped as a repeat with
probability at most P (default one in a million); repeats are always
dropped. With -0 the items are NUL-terminated, in and out. An -n near
the number of distinct lines to come makes it faster and smaller: the
filter then needs no second sub-filter, each of which every new line has
to be tested against.

--state FILE keeps the filter between runs, so that a line printed by
one run is dropped by the next: the file is read at the start if it
exists and replaced (atomically) at the end, only once all the input was
read and printed. -n and -p size a new state (initial capacity and
rate); an existing one keeps its own, and giving other values for them
is an error. Runs sharing a state file must not overlap.`,
		Example: `  # Unique lines of a log, in order:
  bloomery dedup access.log > unique.log

  # Only the URLs not printed by earlier runs:
  crawl | bloomery dedup --state seen.bloom >> new-urls.txt

  # A larger first filter for a big job, at one in a billion:
  bloomery dedup -n 100M -p 1e-9 huge.txt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := newInputSet(args, cmd.InOrStdin())
			if err != nil {
				return err
			}
			s, err := openDedupState(cmd, state, uint64(n), float64(p))
			if err != nil {
				return err
			}
			var out *atomicfile.File
			if state != "" {
				if out, err = atomicfile.Create(state, 0o666); err != nil {
					return fmt.Errorf("--state: %w", err)
				}
				defer out.Abort()
			}
			if err := runDedup(cmd, in, s, separator(nul)); err != nil {
				return err
			}
			if out == nil {
				return nil
			}
			if _, err := s.WriteTo(out); err != nil {
				return fmt.Errorf("writing --state %s: %w", state, err)
			}
			return out.Commit()
		},
	}
	f := cmd.Flags()
	f.StringVar(&state, "state", "", "keep the lines seen in `FILE` between runs")
	f.VarP(&n, "items", "n", "initial capacity `N` of a new filter; it grows past it")
	f.VarP(&p, "rate", "p", "rate `P` at which a new line is taken for a repeat, in (0, 1)")
	f.BoolVarP(&nul, "null", "0", false, "items are terminated by NUL bytes, not newlines, in and out")
	return cmd
}

// openDedupState reads the state file, or makes a new filter when there
// is none.
func openDedupState(cmd *cobra.Command, path string, n uint64, p float64) (*bloom.Scalable, error) {
	if path != "" {
		f, err := os.Open(path)
		switch {
		case err == nil:
			defer f.Close()
			s, err := bloom.LoadScalable(f)
			if err != nil {
				return nil, fmt.Errorf("--state %s: %w", path, err)
			}
			return s, checkStateFlags(cmd, path, s, n, p)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("--state: %w", err)
		}
	}
	s, err := bloom.NewScalable(n, p)
	if err != nil {
		return nil, usageErrorf("invalid -n %d or -p %g: %v", n, p, err)
	}
	return s, nil
}

// checkStateFlags refuses -n or -p given with other values than those of
// the existing state s.
func checkStateFlags(cmd *cobra.Command, path string, s *bloom.Scalable, n uint64, p float64) error {
	if n0 := s.InitialCap(); cmd.Flags().Changed("items") && n != n0 {
		return usageErrorf("-n/--items %d differs from the initial capacity %d of --state %s (drop -n, or use a new state file)",
			n, n0, path)
	}
	if cmd.Flags().Changed("rate") && p != s.TargetFPR() {
		return usageErrorf("-p/--rate %g differs from the rate %g of --state %s (drop -p, or use a new state file)",
			p, s.TargetFPR(), path)
	}
	return nil
}

// runDedup prints the items of in that s reports new, adding them.
func runDedup(cmd *cobra.Command, in *inputSet, s *bloom.Scalable, sep byte) error {
	w := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	var seen uint64
	err := in.each(sep, nil, func(items [][]byte) error {
		for _, it := range items {
			added, err := s.Add(it)
			if err != nil {
				return fmt.Errorf("after %d items: %w", seen, err)
			}
			seen++
			if added {
				w.Write(it)
				w.WriteByte(sep)
			}
		}
		return w.Flush()
	})
	if err != nil {
		return err
	}
	return w.Flush()
}
