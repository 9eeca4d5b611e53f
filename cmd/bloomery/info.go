package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
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
filters (kind 3, with the counters in use and saturated). The fill and
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
			return runInfo(cmd.OutOrStdout(), args[0], ff)
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

func runInfo(w io.Writer, path string, ff *filterFile) error {
	t := &infoTable{tw: tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)}
	size := int64(-1)
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	t.row("file", "%s (%d bytes, %s)", path, size, humanBytes(uint64(max(size, 0))))
	var err error
	switch {
	case ff.mapped != nil:
		infoFilter(t, ff.mapped)
	case ff.scalable != nil:
		err = infoScalable(t, ff.scalable)
	default:
		err = infoCounting(t, path, ff.counting)
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

// subHeader is the geometry and count of one sub-filter of a scalable
// filter, from its kind-1 header in DumpHeader (docs/FORMAT.md).
type subHeader struct {
	sizing bloom.Sizing
	hash   bloom.HashID
	count  uint64
}

// scalableHeaders splits s.DumpHeader: the parameter block's tightening
// and first share, and each sub-filter's header.
func scalableHeaders(s *bloom.Scalable) (tightening, firstShare float64, subs []subHeader) {
	le := binary.LittleEndian
	b := s.DumpHeader()
	tightening = math.Float64frombits(le.Uint64(b[64+8:]))
	firstShare = math.Float64frombits(le.Uint64(b[64+16:]))
	for h := b[128:]; len(h) >= 64; h = h[64:] {
		subs = append(subs, subHeader{
			sizing: bloom.Sizing{Layout: bloom.Layout(h[11]), Bits: le.Uint64(h[16:]), K: le.Uint32(h[24:]),
				N: le.Uint64(h[32:]), P: math.Float64frombits(le.Uint64(h[40:]))},
			hash:  bloom.HashID(h[12]),
			count: le.Uint64(h[48:]),
		})
	}
	return tightening, firstShare, subs
}

func infoScalable(t *infoTable, s *bloom.Scalable) error {
	info := s.Info()
	tightening, firstShare, subs := scalableHeaders(s)
	t.row("kind", "scalable filter (kind 2), read into memory")
	t.row("layout", "%s", subs[0].sizing.Layout)
	t.row("hash", "%s", subs[0].hash)
	t.row("initial capacity", "%d items", subs[0].sizing.N)
	t.row("target rate (p)", "%s (compound, over all sub-filters)", formatRate(s.TargetFPR()))
	if info.NonScaling {
		t.row("growth", "none (non-scaling: new items past capacity are refused)")
	} else {
		t.row("growth", "capacity ×%d per sub-filter; rate split: first share %g, tightening %g",
			info.Expansion, firstShare, tightening)
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
	fmt.Fprintln(t.tw, "sub-filter\tcapacity\ttarget rate\tbits\tk\titems\tbits set\testimated rate")
	buf := make([]byte, 1<<20)
	var off int64
	for i, sub := range subs {
		set, err := popcountPayload(s, off, int64(sub.sizing.Bytes()), buf)
		if err != nil {
			return err
		}
		off += int64(sub.sizing.Bytes())
		_, rate := bloom.EstimateFromFill(sub.sizing, set)
		fmt.Fprintf(t.tw, "%d\t%d\t%s\t%d\t%d\t%d\t%.2f%%\t%s\n", i, sub.sizing.N, formatRate(sub.sizing.P),
			sub.sizing.Bits, sub.sizing.K, sub.count, 100*float64(set)/float64(sub.sizing.Bits), formatRate(rate))
	}
	if info.NonScaling && info.Items >= info.Capacity {
		t.notes = append(t.notes, fmt.Sprintf(
			"warning: the filter is full: it holds its capacity of %d items and, being non-scaling, refuses new ones.", info.Capacity))
	}
	return nil
}

// popcountPayload counts the bits set in payload bytes [off, off+n) of s.
func popcountPayload(s *bloom.Scalable, off, n int64, buf []byte) (uint64, error) {
	var set uint64
	for n > 0 {
		chunk := buf[:min(int64(len(buf)), n)]
		if _, err := s.ReadPayloadAt(chunk, off); err != nil && err != io.EOF {
			return 0, err
		}
		set += popcountBytes(chunk)
		off += int64(len(chunk))
		n -= int64(len(chunk))
	}
	return set, nil
}

func popcountBytes(b []byte) uint64 {
	var set int
	for len(b) >= 8 {
		set += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, c := range b {
		set += bits.OnesCount8(c)
	}
	return uint64(set)
}

func infoCounting(t *infoTable, path string, c *bloom.Counting) error {
	inUse, saturated, err := countCounters(path, c.Bytes())
	if err != nil {
		return err
	}
	s := bloom.Sizing{Layout: bloom.Classic, N: c.Cap(), P: c.TargetFPR(), Bits: c.Counters(), K: c.K()}
	t.row("kind", "counting filter (kind 3), read into memory")
	t.geometry(s, c.HashID())
	t.row("counters", "%d of 4 bits (%s)", c.Counters(), humanBytes(c.Bytes()))
	t.row("items", "%d (adds less removes)", c.Inserted())
	t.row("counters in use", "%d (%.2f%%)", inUse, 100*float64(inUse)/float64(c.Counters()))
	t.row("saturated counters", "%d (at 15: removes no longer clear them)", saturated)
	est, rate := bloom.EstimateFromFill(s, inUse)
	items := uint64(math.Round(est))
	t.row("estimated items", "%d (from the counters in use)", items)
	t.row("estimated rate now", "%s", formatRate(rate))
	t.capacityNote(c.Inserted(), items, s.N, rate, s.P)
	if saturated > 0 {
		t.notes = append(t.notes, fmt.Sprintf(
			"note: %d counters are saturated; removing items that use them can leave false positives behind.", saturated))
	}
	return nil
}

// countCounters reads the counters of the counting filter file at path
// (payload bytes after the 64-byte header, two 4-bit counters a byte) and
// counts those not zero and those saturated at 15.
func countCounters(path string, payload uint64) (inUse, saturated uint64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := io.NewSectionReader(f, 64, int64(payload))
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			lo, hi := b&15, b>>4
			inUse += uint64(boolInt(lo != 0) + boolInt(hi != 0))
			saturated += uint64(boolInt(lo == 15) + boolInt(hi == 15))
		}
		if err == io.EOF {
			return inUse, saturated, nil
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", path, err)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
