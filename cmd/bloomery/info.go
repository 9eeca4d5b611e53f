package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/bloomery/bloom"
	"github.com/spf13/cobra"
)

func newInfoCmd() *cobra.Command {
	var skipCRC bool
	cmd := &cobra.Command{
		Use:   "info FILTER",
		Short: "Describe a filter file: parameters, fill, estimated items and rate",
		Long: `info prints what a filter file holds: its kind, layout and hash, the
capacity n and rate p it was sized for, its size, the items its writer
counted, the share of bits set, and from those bits the estimated number
of distinct items and the false-positive rate it has now. A warning
follows when the filter holds more than its capacity or its rate is
above the target.

It reads filter files (kind 1, memory-mapped as check maps them),
scalable filters (kind 2, with a line per sub-filter) and counting
filters (kind 3, with the counters in use and saturated), from regular
files or, read once, from pipes, FIFOs and /dev/stdin. The fill and
estimates read the whole bit array.`,
		Example: `  bloomery info passwords.bloom

  # A multi-gigabyte filter, without the CRC pass over the file:
  bloomery info --skip-crc huge.bloom`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("want one FILTER argument, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ff, err := openFilterFile(args[0], skipCRC)
			if err != nil {
				return err
			}
			defer ff.Close()
			return guardFile(args[0], ff, func() error {
				return runInfo(cmd.OutOrStdout(), args[0], ff)
			})
		},
	}
	cmd.Flags().BoolVar(&skipCRC, "skip-crc", false, "open without checking the bit array's CRC (instant; corruption undetected)")
	return cmd
}

// infoTable is info's report: label and value rows, then notes.
type infoTable struct {
	tw    *tabwriter.Writer
	notes []string
}

func (t *infoTable) row(label, format string, args ...any) {
	fmt.Fprintf(t.tw, "%s\t%s\n", label, fmt.Sprintf(format, args...))
}

func runInfo(w io.Writer, path string, ff *bloom.File) error {
	t := &infoTable{tw: tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)}
	size := ff.EncodedSize()
	t.row("file", "%s (%d bytes, %s)", path, size, humanBytes(uint64(size)))
	var err error
	switch ff.Kind {
	case bloom.KindFilter:
		infoFilter(t, ff.Filter)
	case bloom.KindScalable:
		err = infoScalable(t, ff.Scalable)
	case bloom.KindCuckoo:
		err = infoCuckoo(t, ff.Cuckoo)
	default:
		infoCounting(t, ff.Counting)
	}
	if err != nil {
		return err
	}
	if err := t.tw.Flush(); err != nil {
		return err
	}
	for _, n := range t.notes {
		fmt.Fprintln(w)
		fmt.Fprintln(w, n)
	}
	return nil
}

// geometry writes the rows every kind shares.
func (t *infoTable) geometry(s bloom.Sizing, hash bloom.HashID) {
	t.row("layout", "%s", s.Layout)
	t.row("hash", "%s", hash)
	t.row("capacity (n)", "%d items", s.N)
	t.row("target rate (p)", "%s", formatRate(s.P))
	t.row("k (hashes per item)", "%d", s.K)
}

// capacityNote warns when the filter's writer counted more items than
// its capacity n, or its estimated rate now is above the target p. (The
// estimated item count alone is too noisy near n to warn on.)
func (t *infoTable) capacityNote(counted, estimated, n uint64, rate, p float64) {
	if counted <= n && rate <= p {
		return
	}
	items := max(counted, estimated)
	t.notes = append(t.notes, fmt.Sprintf(
		"warning: past capacity: about %d items for a capacity of %d (%.2f×); the false-positive rate is now about %s, for a target of %s.",
		items, n, float64(items)/float64(n), formatRate(rate), formatRate(p)))
}

func infoFilter(t *infoTable, m *bloom.MappedFilter) {
	how := "read into memory"
	if m.Mapped() {
		how = "memory-mapped"
	}
	s := m.Sizing()
	t.row("kind", "filter (kind 1), %s", how)
	t.geometry(s, m.HashID())
	t.row("bits (m)", "%d (%s)", s.Bits, humanBytes(s.Bytes()))
	t.row("bits per item", "%.2f", s.BitsPerKey())
	t.row("items added", "%d (as counted by the writer)", m.Inserted())
	t.row("bits set", "%.2f%%", 100*m.FillRatio())
	est, rate := m.Count(), m.EstimatedFPR()
	t.row("estimated items", "%d (from the bits set)", est)
	t.row("estimated rate now", "%s (expected at %d items: %s)", formatRate(rate), est, formatRate(s.FPRAt(est)))
	t.capacityNote(m.Inserted(), est, s.N, rate, s.P)
}

func infoScalable(t *infoTable, s *bloom.Scalable) error {
	info, opts := s.Info(), s.Growth()
	t.row("kind", "scalable filter (kind 2), read into memory")
	if s.Layout() == bloom.Blocked && !opts.UniformLayout {
		t.row("layout", "%s (sub-filters of at most 512 bytes classic where that is smaller)", s.Layout())
	} else {
		t.row("layout", "%s", s.Layout())
	}
	t.row("hash", "%s", s.HashID())
	t.row("initial capacity", "%d items", s.InitialCap())
	t.row("target rate (p)", "%s (compound, over all sub-filters)", formatRate(s.TargetFPR()))
	if opts.NonScaling {
		t.row("growth", "none (non-scaling: new items past capacity are refused)")
	} else {
		t.row("growth", "capacity ×%d per sub-filter; rate split: first share %g, tightening %g",
			opts.Expansion, opts.FirstShare, opts.Tightening)
	}
	t.row("sub-filters", "%d", info.Filters)
	t.row("capacity", "%d items (all sub-filters)", info.Capacity)
	t.row("bits", "%d (%s)", 8*info.Bytes, humanBytes(info.Bytes))
	t.row("items added", "%d", info.Items)
	t.row("estimated rate now", "%s", formatRate(s.EstimatedFPR()))
	if err := t.tw.Flush(); err != nil {
		return err
	}

	// A table of the sub-filters; fills from their bits.
	fmt.Fprintln(t.tw)
	fmt.Fprintln(t.tw, "sub-filter\tcapacity\ttarget rate\tbits\tk\titems\tbits set\testimated rate\tlayout")
	for i, sub := range s.SubFilters() {
		sz := sub.Sizing
		_, rate := bloom.EstimateFromFill(sz, sub.SetBits)
		fmt.Fprintf(t.tw, "%d\t%d\t%s\t%d\t%d\t%d\t%.2f%%\t%s\t%s\n", i, sz.N, formatRate(sz.P),
			sz.Bits, sz.K, sub.Items, 100*float64(sub.SetBits)/float64(sz.Bits), formatRate(rate), sz.Layout)
	}
	if info.NonScaling && info.Items >= info.Capacity {
		t.notes = append(t.notes, fmt.Sprintf(
			"warning: the filter is full: it holds its capacity of %d items and, being non-scaling, refuses new ones.", info.Capacity))
	}
	return nil
}

func infoCounting(t *infoTable, c *bloom.Counting) {
	st := c.Stats()
	s := bloom.Sizing{Layout: bloom.Classic, N: c.Cap(), P: c.TargetFPR(), Bits: c.Counters(), K: c.K()}
	t.row("kind", "counting filter (kind 3), read into memory")
	t.geometry(s, c.HashID())
	t.row("counters", "%d of 4 bits (%s)", c.Counters(), humanBytes(c.Bytes()))
	t.row("items", "%d (adds less removes)", c.Inserted())
	t.row("counters in use", "%d (%.2f%%)", st.InUse, 100*float64(st.InUse)/float64(c.Counters()))
	t.row("saturated counters", "%d (at 15: removes no longer clear them)", st.Saturated)
	est, rate := bloom.EstimateFromFill(s, st.InUse)
	items := uint64(math.Round(est))
	t.row("estimated items", "%d (from the counters in use)", items)
	t.row("estimated rate now", "%s", formatRate(rate))
	t.capacityNote(c.Inserted(), items, s.N, rate, s.P)
	if st.Saturated > 0 {
		t.notes = append(t.notes, fmt.Sprintf(
			"note: %d counters are saturated; removing items that use them can leave false positives behind.", st.Saturated))
	}
}
