package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

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
filter files, and filters that are not regular files (a pipe, a FIFO,
/dev/stdin, <(…)), are read into memory, once. A mapped file truncated
while check runs is an error (exit status 2).`,
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
			var selected uint64
			err = guardFile(args[0], ff, func() (err error) {
				selected, err = c.run(args[1:], cmd.InOrStdin())
				return err
			})
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
	ff                   *bloom.File
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
	c.dst = c.ff.TestMany(items, c.dst)
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

// openFilterFile opens the filter file at path, of any kind, reading it
// once (so it may be a pipe): a fixed-size filter in a regular file is
// memory-mapped. Errors name the file.
func openFilterFile(path string, skipCRC bool) (*bloom.File, error) {
	var opts []bloom.Option
	if skipCRC {
		opts = append(opts, bloom.WithoutPayloadCRC())
	}
	ff, err := bloom.OpenAny(path, opts...)
	if errors.Is(err, bloom.ErrKeyRequired) {
		return nil, fmt.Errorf("%s: the filter is keyed (SipHash with a secret key); bloomery reads only unkeyed filters", path)
	}
	return ff, err
}

// guardFile runs fn, which uses the filter ff opened from path, and turns
// a fault reading a mapped file truncated underneath into an error.
func guardFile(path string, ff *bloom.File, fn func() error) error {
	var err error
	if ff.Guard(func() { err = fn() }) != nil {
		return fmt.Errorf("filter file %s changed while in use (truncated?)", path)
	}
	return err
}
