package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bloomery/bloom"
	"github.com/spf13/cobra"
)

// newFprCmd is "bloomery fpr": measure a filter's false-positive rate.
func newFprCmd() *cobra.Command {
	var (
		cfg      = fprConfig{n: 100_000, probes: 50_000, p: 0.01, keys: "user:%d", seed: 1}
		n, m     = countValue(cfg.n), countValue(cfg.probes)
		p        = rateValue(cfg.p)
		layout   = newLayoutsValue()
		interval time.Duration
	)
	layout.Set("blocked")
	cmd := &cobra.Command{
		Use:   "fpr -n N --probes M [-p P] [--target memory|redis://host:port/db|bloomery://host:port]",
		Short: "Measure a filter's false-positive rate: insert N items, probe M others",
		Long: `fpr creates a filter for N items at false-positive rate P, inserts N
distinct items, probes M items that were never inserted, and prints the
observed false-positive rate with its 99% confidence interval (Wilson
score) next to the target P, so you can see whether the filter keeps its
promise on your kind of keys.

--target picks the filter:
  memory                       a bloom.Filter in this process (default)
  redis://host:port/db[/name]  a redisfilter.Filter in Redis (BITFIELD,
                               no modules), created, filled in pipelined
                               batches, and deleted afterwards
  bloomery://host:port[/name]  a running "bloomery serve" (or any RedisBloom)
                               through BF.RESERVE, BF.MADD and BF.MEXISTS,
                               deleted afterwards
The key name defaults to "bloomery-fpr:" and a random suffix; an existing
key is never touched (fpr fails instead).

--keys is a pattern with one %d or %x: item i is the pattern with i in
decimal (%d: sequential IDs such as user:0, user:1, … the adversarial
case for weak hashes) or with a 64-bit scramble of i and --seed in hex
(%x). Items 0 … N-1 are inserted and N … N+M-1 probed, so the probes are
distinct and never inserted.

The report goes to standard output, progress and timing to standard
error.`,
		Example: `  # The experiment from the articles: 100k users, 50k unseen probes, 1%:
  bloomery fpr -n 100000 --probes 50000 -p 0.01

  # A tighter rate on URL-like keys, classic layout:
  bloomery fpr -n 1e6 --probes 1e6 -p 0.001 --keys 'https://example.com/item/%d' --layout classic

  # The same experiment on Redis and on a running bloomery serve:
  bloomery fpr -n 100000 --probes 50000 --target redis://127.0.0.1:6379/0
  bloomery fpr -n 100000 --probes 50000 --target bloomery://127.0.0.1:6380`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("items") {
				return usageErrorf("flag -n/--items is required")
			}
			cfg.n, cfg.probes, cfg.p = uint64(n), uint64(m), float64(p)
			cfg.layout = layout.layouts[0]
			if len(layout.layouts) != 1 {
				return usageErrorf("invalid --layout all: fpr measures one layout (blocked or classic)")
			}
			if cfg.n > math.MaxUint64-cfg.probes {
				return usageErrorf("-n %d plus --probes %d overflows", cfg.n, cfg.probes)
			}
			keys, err := parseFprKeys(cfg.keys, cfg.seed)
			if err != nil {
				return usageErrorf("invalid --keys %q: %v", cfg.keys, err)
			}
			target, err := parseFprTarget(cfg.target)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			log := fprLog{w: cmd.ErrOrStderr(), every: interval}
			return runFpr(ctx, cmd.OutOrStdout(), log, cfg, keys, target)
		},
	}
	f := cmd.Flags()
	f.VarP(&n, "items", "n", "items `N` to insert, also the filter's capacity (required)")
	f.Var(&m, "probes", "never-inserted items `M` to probe")
	f.VarP(&p, "rate", "p", "target false-positive rate `P` in (0, 1)")
	f.StringVar(&cfg.target, "target", "memory", "memory, redis://host:port/db[/name] or bloomery://host:port[/name]")
	f.Var(layout, "layout", "filter layout for memory and redis targets: blocked or classic")
	f.StringVar(&cfg.keys, "keys", cfg.keys, "item `pattern` with one %d (sequential) or %x (scrambled)")
	f.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the %x scramble")
	f.DurationVar(&interval, "progress", 2*time.Second, "interval between progress lines on stderr (0: none)")
	return cmd
}

// fprConfig is an fpr run.
type fprConfig struct {
	n, probes uint64
	p         float64
	layout    bloom.Layout
	keys      string
	seed      uint64
	target    string
}

// fprBatch is the items per call to a target: one pipelined round trip
// on Redis, a few on a bloomery server.
const fprBatch = 8192

// fprFilter is the filter under test.
type fprFilter interface {
	// describe says what the filter is, for the report.
	describe() string
	// add inserts items.
	add(ctx context.Context, items [][]byte) error
	// count returns how many of items may be present.
	count(ctx context.Context, items [][]byte) (uint64, error)
	// model is the rate the library's model expects at n items, if known.
	model() (float64, bool)
	// close releases the filter, deleting it from a server.
	close(ctx context.Context) error
}

// runFpr runs the experiment and writes the report to w.
func runFpr(ctx context.Context, w io.Writer, log fprLog, cfg fprConfig, keys fprKeys, target fprTarget) (err error) {
	f, err := target.open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if cerr := f.close(cctx); cerr != nil && err == nil {
			err = cerr
		}
	}()
	log.printf("%s", f.describe())

	_, err = fprPhase(ctx, log, "inserted", keys, 0, cfg.n, func(items [][]byte) (uint64, error) {
		return 0, f.add(ctx, items)
	})
	if err != nil {
		return err
	}
	fp, err := fprPhase(ctx, log, "probed", keys, cfg.n, cfg.n+cfg.probes, func(items [][]byte) (uint64, error) {
		return f.count(ctx, items)
	})
	if err != nil {
		return err
	}
	return writeFprReport(w, cfg, keys, f, fp)
}

// fprPhase calls fn on the items lo … hi-1 in batches and returns the sum
// of its results, logging progress and the phase's time.
func fprPhase(ctx context.Context, log fprLog, verb string, keys fprKeys, lo, hi uint64,
	fn func(items [][]byte) (uint64, error)) (uint64, error) {
	start, last := time.Now(), time.Now()
	var (
		sum   uint64
		buf   []byte
		items = make([][]byte, 0, fprBatch)
		ends  = make([]int, 0, fprBatch)
	)
	for i := lo; i < hi; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		buf, items, ends = buf[:0], items[:0], ends[:0]
		end := i + min(fprBatch, hi-i)
		for ; i < end; i++ {
			buf = keys.appendItem(buf, i)
			ends = append(ends, len(buf))
		}
		off := 0
		for _, e := range ends { // slice once all are appended: buf may move
			items = append(items, buf[off:e:e])
			off = e
		}
		r, err := fn(items)
		if err != nil {
			return 0, err
		}
		sum += r
		if log.every > 0 && time.Since(last) >= log.every && i < hi {
			last = time.Now()
			log.printf("%s %d/%d items (%.0f%%)", verb, i-lo, hi-lo, 100*float64(i-lo)/float64(hi-lo))
		}
	}
	d := time.Since(start)
	log.printf("%s %d items in %v (%s items/s)", verb, hi-lo, d.Round(time.Millisecond), perSecond(hi-lo, d))
	return sum, nil
}

// perSecond formats count/d with an SI suffix: "3.20M".
func perSecond(count uint64, d time.Duration) string {
	r := float64(count) / max(d.Seconds(), 1e-9)
	for _, u := range []struct {
		suffix string
		scale  float64
	}{{"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if r >= u.scale {
			return strconv.FormatFloat(r/u.scale, 'f', 2, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(r, 'f', 0, 64)
}

// fprLog writes progress lines, prefixed "fpr: ", to standard error.
type fprLog struct {
	w     io.Writer
	every time.Duration // between progress lines within a phase; 0: none
}

func (l fprLog) printf(format string, args ...any) {
	fmt.Fprintf(l.w, "fpr: "+format+"\n", args...)
}

// confidenceZ is the standard normal quantile of a two-sided 99% interval.
const confidenceZ = 2.5758293035489004

// wilson returns the 99% Wilson score interval of a binomial proportion
// with k successes in n trials. Unlike the normal approximation it stays
// inside [0, 1] and is not degenerate at k = 0.
func wilson(k, n uint64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	nf, z2 := float64(n), confidenceZ*confidenceZ
	phat := float64(k) / nf
	center := (phat + z2/(2*nf)) / (1 + z2/nf)
	half := confidenceZ / (1 + z2/nf) * math.Sqrt(phat*(1-phat)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// fprVerdict compares the target rate p with the interval [lo, hi].
func fprVerdict(p, lo, hi float64) string {
	switch {
	case lo > p:
		return "ABOVE the target: the rate exceeds P with 99% confidence"
	case hi < p:
		return "below the target with 99% confidence"
	}
	return "consistent with the target (P is inside the 99% interval)"
}

// writeFprReport writes the report of fp false positives to w.
func writeFprReport(w io.Writer, cfg fprConfig, keys fprKeys, f fprFilter, fp uint64) error {
	observed := float64(fp) / float64(max(cfg.probes, 1))
	lo, hi := wilson(fp, cfg.probes)
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "filter\t%s\n", f.describe())
	fmt.Fprintf(tw, "inserted\t%d items: %s\n", cfg.n, keys.span(0, cfg.n))
	fmt.Fprintf(tw, "probed\t%d never-inserted items: %s\n", cfg.probes, keys.span(cfg.n, cfg.n+cfg.probes))
	fmt.Fprintf(tw, "false positives\t%d\n", fp)
	fmt.Fprintf(tw, "observed rate\t%s (99%% CI %s … %s, Wilson)\n", formatRate(observed), formatRate(lo), formatRate(hi))
	fmt.Fprintf(tw, "target rate\t%s\n", formatRate(cfg.p))
	if r, ok := f.model(); ok {
		fmt.Fprintf(tw, "model rate\t%s (expected at %d items for this geometry)\n", formatRate(r), cfg.n)
	}
	fmt.Fprintf(tw, "verdict\t%s\n", fprVerdict(cfg.p, lo, hi))
	return tw.Flush()
}

// fprKeys generates the items of a run: a prefix, item i in decimal or
// scrambled hex, and a suffix.
type fprKeys struct {
	prefix, suffix string
	scramble       bool
	seed           uint64
}

// parseFprKeys parses a --keys pattern: text with exactly one %d or %x
// (%% is a literal %).
func parseFprKeys(pattern string, seed uint64) (fprKeys, error) {
	k := fprKeys{seed: seed}
	var text strings.Builder
	verbs := 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if c != '%' {
			text.WriteByte(c)
			continue
		}
		if i++; i == len(pattern) {
			return k, errors.New("a % at the end (write %% for a literal %)")
		}
		switch pattern[i] {
		case '%':
			text.WriteByte('%')
		case 'd', 'x':
			if verbs++; verbs > 1 {
				return k, errors.New("more than one %d or %x")
			}
			k.scramble = pattern[i] == 'x'
			k.prefix = text.String()
			text.Reset()
		default:
			return k, fmt.Errorf("%%%c: only %%d, %%x and %%%% are allowed", pattern[i])
		}
	}
	if verbs == 0 {
		return k, errors.New("no %d or %x: the items would not be distinct")
	}
	k.suffix = text.String()
	return k, nil
}

// appendItem appends item i to dst.
func (k fprKeys) appendItem(dst []byte, i uint64) []byte {
	dst = append(dst, k.prefix...)
	if k.scramble {
		dst = strconv.AppendUint(dst, scramble(i, k.seed), 16)
	} else {
		dst = strconv.AppendUint(dst, i, 10)
	}
	return append(dst, k.suffix...)
}

// span describes the items lo … hi-1.
func (k fprKeys) span(lo, hi uint64) string {
	if hi == lo {
		return "none"
	}
	first := string(k.appendItem(nil, lo))
	if hi-lo == 1 {
		return first
	}
	return first + " … " + string(k.appendItem(nil, hi-1))
}

// scramble maps i to a 64-bit value that looks random, a bijection for
// each seed (so distinct i give distinct items): multiplications by odd
// constants, an addition and a rotation are each invertible.
func scramble(i, seed uint64) uint64 {
	x := bits.RotateLeft64(i*0x9e3779b97f4a7c15+seed, 31)
	return bits.RotateLeft64(x*0xbf58476d1ce4e5b9, 27) * 0x94d049bb133111eb
}
