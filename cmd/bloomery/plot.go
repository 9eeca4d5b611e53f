package main

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"strings"

	"github.com/bloomery/bloom"
	"github.com/bloomery/bloom/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// calc --plot: the expected false-positive rate of a filter sized for n
// items, as it fills from empty to 4× n, for the requested rate and its
// two neighbouring decades, in each layout asked for.

// Plot geometry: 10 × 6 inches, 960 × 576 pixels in a PNG (96 dpi).
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 6 * vg.Inch
	plotMaxX   = 4.0 // loads from 0 to 4× n
	plotPoints = 161 // samples per curve: steps of 0.025 n
)

// plotFormat returns the image format of path from its extension, or a
// usage error naming --plot.
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	case "":
		return "", usageErrorf("invalid --plot %q: no file extension (want .svg or .png)", path)
	default:
		return "", usageErrorf("invalid --plot %q: unsupported extension %s (want .svg or .png)", path, ext)
	}
}

// plotRates are the rates drawn for p: the decade above, p and the decade
// below; for p ≥ 0.1, where the decade above is not a rate, the two below.
func plotRates(p float64) []float64 {
	if p*10 < 1 {
		return []float64{p * 10, p, p / 10}
	}
	return []float64{p, p / 10, p / 100}
}

// plotColors tell the rates apart (colour-blind safe: Okabe–Ito blue,
// vermillion, bluish green).
var plotColors = []color.Color{
	color.RGBA{0x00, 0x72, 0xb2, 0xff},
	color.RGBA{0xd5, 0x5e, 0x00, 0xff},
	color.RGBA{0x00, 0x9e, 0x73, 0xff},
}

// writePlot draws the plot for n items at rate p in layouts to path, as
// SVG or PNG by its extension.
func writePlot(path string, n uint64, p float64, layouts []bloom.Layout) error {
	format, err := plotFormat(path)
	if err != nil {
		return err
	}
	pl, err := newFPRPlot(n, p, layouts)
	if err != nil {
		return err
	}
	img, err := pl.WriterTo(plotWidth, plotHeight, format)
	if err != nil {
		return fmt.Errorf("drawing the plot: %w", err)
	}
	if err := atomicfile.WriteFile(path, 0o666, img); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

// newFPRPlot builds the plot: one curve per rate and layout, the
// requested rate's thicker, blocked solid and classic dashed, a dot where
// each curve reaches capacity, and a vertical line at capacity.
func newFPRPlot(n uint64, p float64, layouts []bloom.Layout) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("Expected false-positive rate as the filter fills (sized for n = %s)", groupDigits(n))
	pl.Title.TextStyle.Font.Size = vg.Points(14)
	pl.X.Label.Text = "items inserted / n"
	pl.Y.Label.Text = "false-positive rate"
	pl.X.Min, pl.X.Max = 0, plotMaxX
	pl.X.Tick.Marker = plot.ConstantTicks(loadTicks())
	pl.Y.Scale = plot.LogScale{}
	pl.Y.Tick.Marker = plot.TickerFunc(decadeTicks)
	// Bottom right: the curves are all high there.
	pl.Legend.XOffs, pl.Legend.YOffs = vg.Points(-10), vg.Points(10)
	pl.Legend.TextStyle.Font.Size = vg.Points(11)
	pl.Add(plotter.NewGrid())

	rates := plotRates(p)
	pl.Y.Min, pl.Y.Max = rates[len(rates)-1]*1e-3, 1
	for i, r := range rates {
		for _, l := range layouts {
			s, err := bloom.Size(n, r, l)
			if errors.Is(err, bloom.ErrTooLarge) && r != p {
				continue // a neighbour too large to size: draw the rest
			}
			if err != nil {
				return nil, fmt.Errorf("sizing a %s filter for n = %d at p = %g: %w", l, n, r, err)
			}
			if err := addFPRCurve(pl, s, plotColors[i], r == p); err != nil {
				return nil, err
			}
		}
	}

	capLine, err := plotter.NewLine(plotter.XYs{{X: 1, Y: pl.Y.Min}, {X: 1, Y: 1}})
	if err != nil {
		return nil, err
	}
	capLine.Color = color.Gray{0x60}
	capLine.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
	pl.Add(capLine)
	pl.Legend.Add("capacity (n items)", capLine)
	return pl, nil
}

// addFPRCurve adds the curve of sizing s to pl, with its legend entry.
func addFPRCurve(pl *plot.Plot, s bloom.Sizing, c color.Color, requested bool) error {
	pts := make(plotter.XYs, 0, plotPoints)
	for i := range plotPoints {
		x := plotMaxX * float64(i) / (plotPoints - 1)
		y := s.FPRAt(uint64(math.Round(x * float64(s.N))))
		if y >= pl.Y.Min { // below the axis: not drawn on a log scale
			pts = append(pts, plotter.XY{X: x, Y: min(y, 1)})
		}
	}
	if len(pts) < 2 {
		return nil
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color = c
	line.Width = vg.Points(1.5)
	if requested {
		line.Width = vg.Points(2.5)
	}
	if s.Layout == bloom.Classic {
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	at, err := plotter.NewScatter(plotter.XYs{{X: 1, Y: s.FPRAt(s.N)}})
	if err != nil {
		return err
	}
	at.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	pl.Add(line, at)
	label := fmt.Sprintf("p = %g, %s: %.1f bits/item, k = %d", s.P, s.Layout, s.BitsPerKey(), s.K)
	if requested {
		label += " (requested)"
	}
	pl.Legend.Add(label, line)
	return nil
}

// loadTicks labels the load axis every half n.
func loadTicks() []plot.Tick {
	var ticks []plot.Tick
	for i := 0; i <= int(plotMaxX*4); i++ {
		x := float64(i) / 4
		t := plot.Tick{Value: x}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%g", x)
			if x == 1 {
				t.Label = "1 (n)"
			}
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// decadeTicks labels each power of ten in [lo, hi] ("0.01", "1e-6"),
// with unlabelled ticks at 2…9 times each.
func decadeTicks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		d := math.Pow10(e)
		label := fmt.Sprintf("1e%d", e)
		if e >= -3 {
			label = fmt.Sprintf("%g", d)
		}
		ticks = append(ticks, plot.Tick{Value: d, Label: label})
		for i := 2; i < 10; i++ {
			ticks = append(ticks, plot.Tick{Value: float64(i) * d})
		}
	}
	return ticks
}

// groupDigits writes n with thousands separators: 1,000,000.
func groupDigits(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
