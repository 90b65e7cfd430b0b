package logs

import (
	"math"
	"slices"
)

// latencies counts latencies for the stats percentiles in bounded memory: a
// stats query may cover millions of records, and keeping every value to
// sort (8 bytes each, doubled by append) took 100+ MiB for 6 M records.
// Values are counted in microsecond buckets that keep four significant
// digits, so a percentile is exact below 10 ms and at most 0.1% under the
// observed value above it, whatever the number of records; the bucket count
// is bounded by the latencies' range (at most 9,000 per power of ten).
type latencies struct {
	counts map[int64]int
	n      int
}

// latencyBucket is the lower bound, in microseconds, of us's bucket.
func latencyBucket(us int64) int64 {
	if us < 10000 {
		return max(us, 0)
	}
	scale := int64(1)
	for us/scale >= 10000 {
		scale *= 10
	}
	return us / scale * scale
}

func (l *latencies) add(ms float64) {
	if l.counts == nil {
		l.counts = map[int64]int{}
	}
	l.counts[latencyBucket(int64(math.Round(ms*1000)))]++
	l.n++
}

// percentiles returns the nearest-rank percentiles ps (ascending), in
// milliseconds: the bucket of the value that has that rank.
func (l *latencies) percentiles(ps ...float64) []float64 {
	out := make([]float64, len(ps))
	if l.n == 0 {
		return out
	}
	keys := make([]int64, 0, len(l.counts))
	for k := range l.counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	seen, ki := 0, 0
	for i, p := range ps {
		rank := max(int(math.Ceil(p/100*float64(l.n))), 1)
		for ki < len(keys) && seen+l.counts[keys[ki]] < rank {
			seen += l.counts[keys[ki]]
			ki++
		}
		if ki < len(keys) {
			out[i] = float64(keys[ki]) / 1000
		}
	}
	return out
}
