package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/atomicfile"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newBuildCmd() *cobra.Command {
	var (
		n      countValue
		p      rateValue
		layout = layoutValue{bloom.Blocked}
		out    string
		nul    bool
	)
	cmd := &cobra.Command{
		Use:   "build -n N -p P [-o FILE] [-0] [FILE…]",
		Short: "Build a filter from the lines of files or standard input",
		Long: `build makes a filter for N distinct items at false-positive rate P (sized
as calc shows) and adds every line of the input files, or of standard
input when there are none or a file is "-". With -0 the items are
NUL-terminated instead (find -print0, xargs -0), so they may contain
newlines. An item is exactly the bytes between separators: an empty line
is an item, and a "\r" before the newline is part of the item.

The filter file goes to -o FILE, written to a temporary file beside it,
flushed to disk and renamed over FILE only once complete (so a crash
leaves the old FILE or the whole new one), or to standard output (not
to a terminal). check, info and the library's Load and OpenFile read it.

While it reads, a progress bar with items, rate and time left is drawn
on standard error if that is a terminal and the input size is known
(files, or standard input redirected from a file). If the input held
more distinct items than N, a warning gives the rate the filter now
has.`,
		Example: `  # A filter of leaked passwords, one per line:
  bloomery build -n 10M -p 1e-6 -o passwords.bloom leaked.txt

  # From standard input, to standard output:
  zcat urls.txt.gz | bloomery build -n 1e6 -p 0.01 > urls.bloom

  # File names, which may contain newlines, NUL-separated:
  find / -xdev -print0 | bloomery build -0 -n 5M -p 0.001 -o files.bloom

  # The classic layout: a little less memory, slower lookups:
  bloomery build -n 1e6 -p 0.01 --layout classic -o small.bloom a.txt b.txt`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "items", "rate"); err != nil {
				return err
			}
			sizings, err := calcSizings(uint64(n), float64(p), []bloom.Layout{layout.l})
			if err != nil {
				return err
			}
			return runBuild(cmd, sizings[0], out, separator(nul), args)
		},
	}
	f := cmd.Flags()
	f.VarP(&n, "items", "n", "expected number of distinct items `N` (required)")
	f.VarP(&p, "rate", "p", "target false-positive rate `P` at N items, in (0, 1) (required)")
	f.Var(&layout, "layout", "filter layout: blocked or classic")
	f.StringVarP(&out, "output", "o", "", "write the filter to `FILE` (default: standard output)")
	f.BoolVarP(&nul, "null", "0", false, "items are terminated by NUL bytes, not newlines")
	return cmd
}

// requireFlags returns a usage error naming the first of the flags that
// was not given.
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if !cmd.Flags().Changed(name) {
			f := cmd.Flags().Lookup(name)
			return usageErrorf("flag -%s/--%s is required", f.Shorthand, f.Name)
		}
	}
	return nil
}

// runBuild builds the filter of sizing s from the inputs and writes it
// to out ("" or "-": standard output).
func runBuild(cmd *cobra.Command, s bloom.Sizing, out string, sep byte, inputs []string) error {
	if s.Bytes() > bloom.DefaultMaxBytes {
		return usageErrorf("a filter for -n %d at -p %g needs %s, more than the %s limit",
			s.N, s.P, humanBytes(s.Bytes()), humanBytes(bloom.DefaultMaxBytes))
	}
	in, err := newInputSet(inputs, cmd.InOrStdin())
	if err != nil {
		return err
	}
	// Open the output first: a bad -o fails before the input is read.
	var w io.Writer
	var file *atomicfile.File
	if out == "" || out == "-" {
		w = cmd.OutOrStdout()
		if isTerminal(w) {
			return usageErrorf("not writing a binary filter to a terminal: use -o FILE or redirect standard output")
		}
	} else {
		if file, err = atomicfile.Create(out, 0o666); err != nil {
			return fmt.Errorf("-o: %w", err)
		}
		defer file.Abort()
		w = file
	}
	f, err := bloom.NewSized(s)
	if err != nil {
		return err
	}

	prog := newProgress(cmd.ErrOrStderr(), "build", in.total)
	err = in.each(sep, prog, func(items [][]byte) error {
		f.AddMany(items)
		return nil
	})
	prog.finish()
	if err != nil {
		return err
	}

	if _, err := f.WriteTo(w); err != nil {
		return err
	}
	if file != nil {
		if err := file.Commit(); err != nil {
			return err
		}
	}
	if added := f.Inserted(); added > s.N {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: at least %d distinct items, more than -n %d: the expected false-positive rate is %s, not %g\n",
			cmd.CommandPath(), added, s.N, formatRate(s.FPRAt(added)), s.P)
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// layoutValue is one filter layout, such as build's --layout.
type layoutValue struct{ l bloom.Layout }

func (v *layoutValue) String() string { return v.l.String() }
func (v *layoutValue) Type() string   { return "layout" }
func (v *layoutValue) Set(s string) error {
	l, err := bloom.ParseLayout(strings.ToLower(strings.TrimSpace(s)))
	if err != nil {
		return fmt.Errorf("unknown layout %q (want blocked or classic)", s)
	}
	v.l = l
	return nil
}
