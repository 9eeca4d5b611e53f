package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/bloomery/bloom"
	"github.com/spf13/cobra"
)

func newCheckCmd() *cobra.Command {
	var (
		invert, quiet, count, nul, skipCRC bool
	)
	cmd := &cobra.Command{
		Use:   "check [-v] [-q | -c] [-0] FILTER [ITEM…]",
		Short: "Print the items that may be in a filter (like grep)",
		Long: `check tests items against the filter file FILTER and prints those that
may be present, each followed by a newline (a NUL with -0); -v prints
the absent ones instead. The items are the ITEM arguments or, when
there are none, the lines of standard input (NUL-terminated with -0),
as build reads them. A printed item may be a false positive, at about
the filter's rate; an absent item is certainly not in the filter.

Exit status, as grep's: 0 when an item was printed (or, with -q or -c,
would have been), 1 when none was, 2 on an error.

A filter made by build (or the library's WriteTo) is memory-mapped, not
read: a filter of many gigabytes opens at once, and only the pages the
lookups touch are read. Opening checks the CRC of the whole bit array,
reading the file once; --skip-crc opens without that check, in constant
time, but a corrupt file then gives wrong answers. Scalable and counting
filter files are read into memory.`,
		Example: `  # Which of these passwords leaked?
  bloomery check passwords.bloom hunter2 'correct horse' 123456

  # The lines of new.txt not seen before (a filter of old.txt):
  bloomery check -v old.bloom < new.txt

  # In a script: is this URL on the list?
  if bloomery check -q urls.bloom "$url"; then echo blocked; fi

  # How many of a NUL-separated stream may be present:
  find . -print0 | bloomery check -0 -c files.bloom

  # Items that start with "-" come after --:
  bloomery check words.bloom -- -v --help`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("missing FILTER argument")
			}
			if quiet && count {
				return usageErrorf("-q/--quiet and -c/--count do not go together")
			}
			ff, err := openFilterFile(args[0], skipCRC)
			if err != nil {
				return &exitStatus{checkFailed, err}
			}
			defer ff.Close()
			c := checker{ff: ff, invert: invert, quiet: quiet, count: count, sep: separator(nul),
				w: bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)}
			selected, err := c.run(args[1:], cmd.InOrStdin())
			if err != nil {
				return &exitStatus{checkFailed, err}
			}
			if selected == 0 {
				return &exitStatus{checkNoneSelected, nil}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&invert, "invert", "v", false, "print the items that are absent instead")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing; exit 0 at the first item that would be printed")
	f.BoolVarP(&count, "count", "c", false, "print only how many items would be printed")
	f.BoolVarP(&nul, "null", "0", false, "items are terminated by NUL bytes, not newlines, in and out")
	f.BoolVar(&skipCRC, "skip-crc", false, "open without checking the bit array's CRC (instant; corruption undetected)")
	return cmd
}

// check's exit statuses besides exitOK, as grep's. Usage errors give
// exitUsage, 2, too.
const (
	checkNoneSelected = 1
	checkFailed       = 2
)

// checker tests batches of items and prints the selected ones.
type checker struct {
	ff                   *filterFile
	invert, quiet, count bool
	sep                  byte
	w                    *bufio.Writer
	dst                  []bool
	selected             uint64
}

// errFound stops check -q at the first selected item.
var errFound = errors.New("found")

// run checks the items of args, or of stdin when there are none, and
// returns how many were selected.
func (c *checker) run(args []string, stdin io.Reader) (uint64, error) {
	var err error
	if len(args) > 0 {
		items := make([][]byte, len(args))
		for i, a := range args {
			items[i] = []byte(a)
		}
		err = c.batch(items)
	} else {
		var in *inputSet
		if in, err = newInputSet(nil, stdin); err == nil {
			err = in.each(c.sep, nil, c.batch)
		}
	}
	switch {
	case err == errFound:
		return c.selected, nil
	case err != nil:
		return c.selected, err
	case c.count:
		fmt.Fprintln(c.w, c.selected)
	}
	return c.selected, c.w.Flush()
}

// batch tests items, prints the selected ones and flushes them, so that
// a stream is answered as it arrives.
func (c *checker) batch(items [][]byte) error {
	c.dst = c.ff.testMany(items, c.dst)
	for i, it := range items {
		if c.dst[i] == c.invert {
			continue
		}
		c.selected++
		switch {
		case c.quiet:
			return errFound
		case c.count:
			continue
		}
		c.w.Write(it)
		c.w.WriteByte(c.sep)
	}
	return c.w.Flush()
}

// filterFile is a filter file opened for lookups: a Filter memory-mapped
// (kind 1), or a Scalable (kind 2) or Counting (kind 3) filter read into
// memory. Exactly one of the fields is set.
type filterFile struct {
	mapped   *bloom.MappedFilter
	scalable *bloom.Scalable
	counting *bloom.Counting
}

// File kinds, byte 10 of the header (docs/FORMAT.md).
const (
	kindFilter   = 1
	kindScalable = 2
	kindCounting = 3
)

// openFilterFile opens the filter file at path by its kind. Errors name
// the file.
func openFilterFile(path string, skipCRC bool) (*filterFile, error) {
	var ff filterFile
	var err error
	switch fileKind(path) {
	case kindScalable:
		err = loadFile(path, func(r io.Reader) (err error) {
			ff.scalable, err = bloom.LoadScalable(r)
			return err
		})
	case kindCounting:
		err = loadFile(path, func(r io.Reader) (err error) {
			ff.counting, err = bloom.LoadCounting(r)
			return err
		})
	default: // kind 1, or not a filter file: OpenFile says what is wrong
		ff.mapped, err = bloom.OpenFileWith(path, bloom.OpenOptions{SkipPayloadCRC: skipCRC})
	}
	if errors.Is(err, bloom.ErrKeyRequired) {
		return nil, fmt.Errorf("%s: the filter is keyed (SipHash with a secret key); bloomery reads only unkeyed filters", path)
	}
	if err != nil {
		return nil, err
	}
	return &ff, nil
}

// fileKind is the kind byte of the filter file at path, or 0 when it
// cannot tell.
func fileKind(path string) byte {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	var b [11]byte
	if _, err := io.ReadFull(f, b[:]); err != nil || string(b[:8]) != "BLOOMERY" {
		return 0
	}
	return b[10]
}

// loadFile calls load with the open file at path; errors name it.
func loadFile(path string, load func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := load(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// testMany is TestMany on any kind of filter.
func (ff *filterFile) testMany(items [][]byte, dst []bool) []bool {
	if ff.mapped != nil {
		return ff.mapped.TestMany(items, dst)
	}
	if cap(dst) < len(items) {
		dst = make([]bool, len(items))
	}
	dst = dst[:len(items)]
	for i, it := range items {
		if ff.scalable != nil {
			dst[i] = ff.scalable.Test(it)
		} else {
			dst[i] = ff.counting.Test(it)
		}
	}
	return dst
}

// Close releases a mapped filter.
func (ff *filterFile) Close() error {
	if ff.mapped != nil {
		return ff.mapped.Close()
	}
	return nil
}
