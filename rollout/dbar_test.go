package rollout

import "testing"

func seq(lo, hi int) []int {
	var out []int
	for i := lo; i <= hi; i++ {
		out = append(out, i)
	}
	return out
}

func TestQuantile(t *testing.T) {
	tests := []struct {
		name   string
		values []int
		q      float64
		want   int
	}{
		{"1..100 at 0.99 is the 99th", seq(1, 100), 0.99, 99},
		{"1..200 at 0.99 is the 198th", seq(1, 200), 0.99, 198},
		{"1..300 at 0.99 is the 297th", seq(1, 300), 0.99, 297},
		{"four values at 0.99 is the max", []int{3, 1, 2, 8}, 0.99, 8},
		{"unsorted median", []int{5, 1, 3}, 0.5, 3},
		{"q 0 is the min", []int{5, 1, 3}, 0, 1},
		{"empty", nil, 0.99, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Quantile(tt.values, tt.q); got != tt.want {
				t.Fatalf("Quantile = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestDBarSpec(t *testing.T) {
	tests := []struct {
		in       string
		observed []int
		want     int
		wantErr  bool
	}{
		{in: "8", want: 8},
		{in: " 3 ", observed: []int{100}, want: 3},
		// 101 observations 0..40, 40, 41..99: rank ⌈0.99·101⌉ = 100, and
		// the 100th smallest is 98 (the extra 40 shifts 41..99 up by one).
		{in: "auto", observed: append(seq(0, 99), 40), want: 98},
		{in: "auto", observed: []int{0, 0, 0}, want: 1},
		{in: "AUTO", observed: []int{2, 9, 4, 4}, want: 9},
		{in: "auto", wantErr: true},
		{in: "0", wantErr: true},
		{in: "-2", wantErr: true},
		{in: "many", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			spec, err := ParseDBar(tt.in)
			if err == nil {
				var n int
				n, err = spec.Resolve(tt.observed)
				if err == nil && n != tt.want {
					t.Fatalf("d̄ = %d, want %d", n, tt.want)
				}
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
	if s := (DBarSpec{Auto: true}).String(); s != "auto" {
		t.Errorf("String() = %q, want auto", s)
	}
	if s := (DBarSpec{Fixed: 8}).String(); s != "8" {
		t.Errorf("String() = %q, want 8", s)
	}
}
