package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"text/tabwriter"

	"github.com/bloomery/bloom"
	"github.com/spf13/cobra"
)

func newCalcCmd() *cobra.Command {
	var (
		n        countValue
		p        rateValue
		layout   = newLayoutsValue()
		plotFile string
	)
	cmd := &cobra.Command{
		Use:   "calc -n N -p P [--layout blocked|classic|all] [--plot FILE]",
		Short: "Print the size of a filter for n items at false-positive rate p",
		Long: `calc prints the geometry bloom.Size picks for a filter that holds n
distinct items at a false-positive rate of at most p: bits, bytes, hash
count k and bits per key, plus the rate the model expects once the filter
holds 1, 1.5, 2 and 4 times n items.

The blocked layout (the library default) keeps each item's bits in one
cache line and is the fastest; the classic layout needs a little less
memory. With --layout all (the default) both are shown side by side.

-n takes whole numbers: 1000000, 1_000_000, 1e6, 2.5e6 or 10M (suffixes
k, M, G, T are powers of 1000). -p takes a probability in (0, 1): 0.01,
1e-3 or 1%.

--plot FILE also draws the expected false-positive rate against the
items inserted, from 0 to 4 times n, for p and its neighbouring decades
(p×10 and p/10; p/10 and p/100 when p ≥ 0.1), in each layout shown: an
SVG or PNG image (960×576 pixels) by the file's extension.`,
		Example: `  # One million items at a 1% false-positive rate, both layouts:
  bloomery calc -n 1e6 -p 0.01

  # Ten million items at one in a million, blocked layout only:
  bloomery calc -n 10M -p 1e-6 --layout blocked

  # Percentages work too:
  bloomery calc -n 250_000 -p 0.1%

  # Plot how the rate climbs when the filter overfills:
  bloomery calc -n 1e6 -p 0.01 --plot fpr.svg
  bloomery calc -n 1e6 -p 1e-4 --layout blocked --plot fpr.png`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "items", "rate"); err != nil {
				return err
			}
			if plotFile != "" {
				if _, err := plotFormat(plotFile); err != nil {
					return err
				}
			}
			if err := runCalc(cmd.OutOrStdout(), uint64(n), float64(p), layout.layouts); err != nil {
				return err
			}
			if plotFile == "" {
				return nil
			}
			return writePlot(plotFile, uint64(n), float64(p), layout.layouts)
		},
	}
	f := cmd.Flags()
	f.VarP(&n, "items", "n", "expected number of distinct items `N` (required)")
	f.VarP(&p, "rate", "p", "target false-positive rate `P` at N items, in (0, 1) (required)")
	f.Var(layout, "layout", "filter layout: blocked, classic or all")
	f.StringVar(&plotFile, "plot", "", "also draw the rate against the fill to `FILE` (.svg or .png)")
	return cmd
}

// fprLoads are the loads, as multiples of n, at which calc reports the
// expected false-positive rate.
var fprLoads = []struct {
	label    string
	num, den uint64
}{
	{"1x", 1, 1},
	{"1.5x", 3, 2},
	{"2x", 2, 1},
	{"4x", 4, 1},
}

// calcSizings sizes a filter for n items at rate p in each layout.
func calcSizings(n uint64, p float64, layouts []bloom.Layout) ([]bloom.Sizing, error) {
	sizings := make([]bloom.Sizing, 0, len(layouts))
	for _, l := range layouts {
		s, err := bloom.Size(n, p, l)
		switch {
		case errors.Is(err, bloom.ErrInvalidCapacity):
			return nil, usageErrorf("invalid -n/--items %d: %v", n, err)
		case errors.Is(err, bloom.ErrInvalidRate):
			return nil, usageErrorf("invalid -p/--rate %g: %v", p, err)
		case errors.Is(err, bloom.ErrTooLarge):
			return nil, usageErrorf("no %s filter for -n %d at -p %g: %v", l, n, p, err)
		case err != nil:
			return nil, fmt.Errorf("sizing a %s filter: %w", l, err)
		}
		// Guard against printing a sizing that misses its own target.
		if r := s.FPRAt(s.N); !(r <= s.P) {
			return nil, fmt.Errorf("bloom.Size(%d, %g, %s) gave %v, whose expected rate at n is %s > p (library bug)",
				n, p, l, s, formatRate(r))
		}
		sizings = append(sizings, s)
	}
	return sizings, nil
}

// runCalc writes the sizing report for n items at rate p in the given
// layouts to w.
func runCalc(w io.Writer, n uint64, p float64, layouts []bloom.Layout) error {
	sizings, err := calcSizings(n, p, layouts)
	if err != nil {
		return err
	}

	fmt.Fprintf(w, "Filter for n = %d items at false-positive rate p = %g\n\n", n, p)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	row := func(label string, cell func(s bloom.Sizing) string) {
		fmt.Fprint(tw, label)
		for _, s := range sizings {
			fmt.Fprint(tw, "\t", cell(s))
		}
		fmt.Fprintln(tw)
	}
	row("layout", func(s bloom.Sizing) string { return s.Layout.String() })
	row("bits", func(s bloom.Sizing) string { return strconv.FormatUint(s.Bits, 10) })
	row("bytes", func(s bloom.Sizing) string {
		return fmt.Sprintf("%d (%s)", s.Bytes(), humanBytes(s.Bytes()))
	})
	row("k (hashes per item)", func(s bloom.Sizing) string { return strconv.FormatUint(uint64(s.K), 10) })
	row("bits per key", func(s bloom.Sizing) string { return fmt.Sprintf("%.2f", s.BitsPerKey()) })
	for _, load := range fprLoads {
		items := scaleCount(n, load.num, load.den)
		row(fmt.Sprintf("FPR at %s n (%d items)", load.label, items),
			func(s bloom.Sizing) string { return formatRate(s.FPRAt(items)) })
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	var notes []string
	if note, ok := compareNote(sizings); ok {
		notes = append(notes, note)
	}
	for _, s := range sizings {
		if s.Bytes() > bloom.DefaultMaxBytes {
			notes = append(notes, fmt.Sprintf(
				"%s: %s exceeds the default in-memory limit of %s; raise it with WithMaxBytes.",
				s.Layout, humanBytes(s.Bytes()), humanBytes(bloom.DefaultMaxBytes)))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, note := range notes {
		fmt.Fprintln(w, note)
	}
	return nil
}

// compareNote compares the memory of the blocked and classic sizings, if
// both are present.
func compareNote(sizings []bloom.Sizing) (string, bool) {
	var blocked, classic *bloom.Sizing
	for i := range sizings {
		switch sizings[i].Layout {
		case bloom.Blocked:
			blocked = &sizings[i]
		case bloom.Classic:
			classic = &sizings[i]
		}
	}
	if blocked == nil || classic == nil {
		return "", false
	}
	pct := (float64(blocked.Bits)/float64(classic.Bits) - 1) * 100
	return fmt.Sprintf(
		"blocked uses %+.1f%% memory vs classic for one cache line per lookup (classic: up to %d cache lines).",
		pct, classic.K), true
}

// scaleCount returns n*num/den rounded down, or math.MaxUint64 if that
// overflows.
func scaleCount(n, num, den uint64) uint64 {
	hi, lo := bits.Mul64(n, num)
	if hi >= den {
		return math.MaxUint64
	}
	q, _ := bits.Div64(hi, lo, den)
	return q
}
