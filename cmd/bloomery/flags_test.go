package main

import (
	"math"
	"strings"
	"testing"

	"github.com/bloomery/bloom"
)

func TestParseCount(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr string // substring of the error; "" for success
	}{
		{in: "1", want: 1},
		{in: "1000000", want: 1_000_000},
		{in: "+42", want: 42},
		{in: " 7 ", want: 7},
		{in: "1_000_000", want: 1_000_000},
		{in: "1e6", want: 1_000_000},
		{in: "1E6", want: 1_000_000},
		{in: "1e+6", want: 1_000_000},
		{in: "2.5e6", want: 2_500_000},
		{in: "1.5e1", want: 15},
		{in: "1000e-3", want: 1},
		{in: "12.0", want: 12},
		{in: "10k", want: 10_000},
		{in: "1.5K", want: 1_500},
		{in: "10M", want: 10_000_000},
		{in: "2G", want: 2_000_000_000},
		{in: "3T", want: 3_000_000_000_000},
		{in: "18446744073709551615", want: math.MaxUint64},
		{in: "1e19", want: 1e19},

		{in: "0", wantErr: "at least 1"},
		{in: "0e6", wantErr: "at least 1"},
		{in: "0.0", wantErr: "at least 1"},
		{in: "-5", wantErr: "at least 1"},
		{in: "-0", wantErr: "at least 1"},
		{in: "1.5", wantErr: "whole number"},
		{in: "1e-3", wantErr: "whole number"},
		{in: "1.0000001e6", wantErr: "whole number"},
		{in: "1.5e0k", want: 1500},
		{in: "18446744073709551616", wantErr: "too large"},
		{in: "1e20", wantErr: "too large"},
		{in: "1e999999999999", wantErr: "exponent out of range"},
		{in: "1e1000", wantErr: "too large"},
		{in: "", wantErr: "not a count"},
		{in: "abc", wantErr: "not a count"},
		{in: "1,000", wantErr: "not a count"},
		{in: "1__000", wantErr: "not a count"},
		{in: "_1000", wantErr: "not a count"},
		{in: "1000_", wantErr: "not a count"},
		{in: "1e", wantErr: "not a count"},
		{in: "0x10", wantErr: "not a count"},
		{in: "inf", wantErr: "not a count"},
		{in: "NaN", wantErr: "not a count"},
		{in: "10m", wantErr: "not a count"},
		{in: ".5e1", wantErr: "not a count"},
	}
	for _, tt := range tests {
		got, err := parseCount(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseCount(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseCount(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{in: "0.01", want: 0.01},
		{in: ".5", want: 0.5},
		{in: "1e-6", want: 1e-6},
		{in: "1%", want: 0.01},
		{in: "0.1 %", want: 0.001},
		{in: "0.999", want: 0.999},

		{in: "0", wantErr: "between 0 and 1"},
		{in: "1", wantErr: "between 0 and 1"},
		{in: "100%", wantErr: "between 0 and 1"},
		{in: "-0.1", wantErr: "between 0 and 1"},
		{in: "1.5", wantErr: "between 0 and 1"},
		{in: "nan", wantErr: "between 0 and 1"},
		{in: "NaN%", wantErr: "between 0 and 1"},
		{in: "inf", wantErr: "between 0 and 1"},
		{in: "1e-400", wantErr: "between 0 and 1"}, // underflows to 0
		{in: "", wantErr: "not a number"},
		{in: "abc", wantErr: "not a number"},
		{in: "1/100", wantErr: "not a number"},
	}
	for _, tt := range tests {
		got, err := parseRate(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseRate(%q) = %g, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("parseRate(%q) = %g, %v; want %g", tt.in, got, err, tt.want)
		}
	}
}

func TestLayoutsValue(t *testing.T) {
	tests := []struct {
		in      string
		want    []bloom.Layout
		wantErr bool
	}{
		{in: "all", want: []bloom.Layout{bloom.Blocked, bloom.Classic}},
		{in: "blocked", want: []bloom.Layout{bloom.Blocked}},
		{in: "Classic", want: []bloom.Layout{bloom.Classic}},
		{in: "both", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		v := newLayoutsValue()
		err := v.Set(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Set(%q) = nil, want error", tt.in)
			}
			continue
		}
		if err != nil || len(v.layouts) != len(tt.want) {
			t.Errorf("Set(%q): layouts %v, err %v; want %v", tt.in, v.layouts, err, tt.want)
			continue
		}
		for i := range tt.want {
			if v.layouts[i] != tt.want[i] {
				t.Errorf("Set(%q): layouts %v, want %v", tt.in, v.layouts, tt.want)
			}
		}
	}
}
