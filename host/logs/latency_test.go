package logs

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLatencyPercentilesMatchNearestRank: against exact nearest-rank
// percentiles of the same values, the bounded counter is equal below 10 ms
// and at most 0.1% under above it, for many shapes of data.
func TestLatencyPercentilesMatchNearestRank(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(5000)
		vals := make([]float64, n)
		var l latencies
		for i := range vals {
			var ms float64
			switch trial % 3 {
			case 0: // sub-millisecond
				ms = float64(r.IntN(1000)) / 1000
			case 1: // log-spread up to minutes
				ms = math.Round(math.Exp(r.Float64()*18)) / 1000
			default: // few distinct values
				ms = float64(1+r.IntN(4)) * 12.345
			}
			vals[i] = ms
			l.add(ms)
		}
		slices.Sort(vals)
		ps := []float64{0, 1, 50, 95, 99, 99.9, 100}
		got := l.percentiles(ps...)
		for i, p := range ps {
			rank := max(int(math.Ceil(p/100*float64(n))), 1)
			want := vals[rank-1]
			if want < 10 && got[i] != want {
				t.Fatalf("trial %d p%v: %v, want exactly %v", trial, p, got[i], want)
			}
			if got[i] > want+1e-9 || got[i] < want*0.999-1e-9 {
				t.Fatalf("trial %d p%v: %v, want within 0.1%% under %v", trial, p, got[i], want)
			}
		}
	}
	if got := (&latencies{}).percentiles(50); got[0] != 0 {
		t.Fatalf("empty: %v", got)
	}
}

func BenchmarkLatencies(b *testing.B) {
	var l latencies
	for i := 0; b.Loop(); i++ {
		l.add(float64(i%200000) / 100)
	}
	b.ReportMetric(float64(len(l.counts)), "buckets")
}
