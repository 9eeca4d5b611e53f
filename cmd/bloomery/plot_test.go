package main

import (
	"encoding/xml"
	"image"
	_ "image/png" // image.DecodeConfig of the PNG
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svgText parses the SVG file at path and returns its root's width and
// height and all its text.
func svgText(t *testing.T, path string) (width, height, text string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var b strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not valid XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "svg" && width == "" {
				for _, a := range tok.Attr {
					switch a.Name.Local {
					case "width":
						width = a.Value
					case "height":
						height = a.Value
					}
				}
			}
		case xml.CharData:
			b.Write(tok)
			b.WriteByte('\n')
		}
	}
	return width, height, b.String()
}

func TestCalcPlotSVG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fpr.svg")
	code, stdout, stderr := runCLI(t, "calc", "-n", "1e6", "-p", "0.01", "--plot", path)
	if code != exitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "bits per key") {
		t.Errorf("the report is missing with --plot:\n%s", stdout)
	}
	width, height, text := svgText(t, path)
	if width != "720pt" || height != "432pt" { // 10 × 6 inches
		t.Errorf("SVG is %s × %s, want 720pt × 432pt", width, height)
	}
	lines := make(map[string]bool)
	for l := range strings.SplitSeq(text, "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{
		"Expected false-positive rate as the filter fills (sized for n = 1,000,000)",
		"items inserted / n",
		"false-positive rate",
		"p = 0.1, blocked: 4.9 bits/item, k = 3",
		"p = 0.01, blocked: 10.1 bits/item, k = 7 (requested)",
		"p = 0.01, classic: 9.7 bits/item, k = 7 (requested)",
		"p = 0.001, classic: 14.5 bits/item, k = 10",
		"capacity (n items)",
		"0", "0.5", "1 (n)", "4", // x ticks
		"1e-6", "1e-4", "0.001", "1", // y ticks
	} {
		if !lines[want] {
			t.Errorf("SVG text lacks %q:\n%s", want, text)
		}
	}
}

func TestCalcPlotPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fpr.PNG")
	code, _, stderr := runCLI(t, "calc", "-n", "5000", "-p", "0.5", "--layout", "blocked", "--plot", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if format != "png" || cfg.Width != 960 || cfg.Height != 576 {
		t.Errorf("%s of %d × %d, want png of 960 × 576", format, cfg.Width, cfg.Height)
	}
}

func TestPlotRates(t *testing.T) {
	for p, want := range map[float64][3]float64{
		0.01: {0.1, 0.01, 0.001},
		0.09: {0.9, 0.09, 0.009},
		0.1:  {0.1, 0.01, 0.001},
		0.5:  {0.5, 0.05, 0.005},
		1e-9: {1e-8, 1e-9, 1e-10},
	} {
		got := plotRates(p)
		for i := range want {
			if r := got[i] / want[i]; r < 1-1e-12 || r > 1+1e-12 {
				t.Errorf("plotRates(%g) = %v, want %v", p, got, want)
				break
			}
		}
	}
}

func TestCalcPlotErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--plot", filepath.Join(dir, "fpr.pdf")}, exitUsage, "invalid --plot"},
		{[]string{"--plot", filepath.Join(dir, "fpr")}, exitUsage, "no file extension"},
		{[]string{"--plot", filepath.Join(dir, "no", "such", "fpr.svg")}, exitError, "--plot: open"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := runCLI(t, append([]string{"calc", "-n", "1000", "-p", "0.01"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, stderr, tt.code, tt.msg)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("files written: %v", entries)
	}
}
