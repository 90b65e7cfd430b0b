package logs_test

import (
	"context"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/logs"
)

func benchRecord(i int) *logs.Record {
	return &logs.Record{
		Object: "chat.completion", Route: "/v1/chat/completions", Provider: "openai", Model: "gpt-4o-mini",
		ResolvedModel: "gpt-4o-mini-2024-07-18", StatusCode: 200, LatencyMS: 123.4, TTFTMS: 45.6, Stream: true,
		PromptTokens: 512, CompletionTokens: 128, Cost: 0.00042, KeyID: "key-1", VirtualKeyID: "vk-42",
		Metadata: map[string]string{"team": "search"}, FallbackIndex: i & 1,
	}
}

// BenchmarkRecord is the hot-path cost: handing a built record over. Run it
// with a fixed count (-benchtime 200000x): the untimed flushes between
// bursts make time-based runs take minutes. The
// records are handed over in bursts that fit the queue, and the writer only
// collects them into its batch while the timer runs (its transactions run
// between bursts, timer stopped), so the figure is the hand-off itself and
// not the writer's work, which BenchmarkWriteThroughput measures.
func BenchmarkRecord(b *testing.B) {
	const burst = 4096
	lg, err := logs.New(logs.Options{Store: openStore(b, b.TempDir(), "bench-passphrase-0123456789"), Log: quiet,
		QueueSize: burst, BatchSize: 10_000, FlushInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	recs := make([]logs.Record, burst)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%burst == 0 && i > 0 {
			b.StopTimer()
			if err := lg.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			for j := range recs {
				recs[j] = *benchRecord(j)
			}
			b.StartTimer()
		}
		lg.Record(&recs[i%burst])
	}
	b.StopTimer()
	if st := lg.WriterStats(); st.Dropped != 0 {
		b.Fatalf("dropped %d", st.Dropped)
	}
}

// BenchmarkRecordParallel hands records over from many goroutines, as
// concurrent requests do.
func BenchmarkRecordParallel(b *testing.B) {
	lg, err := logs.New(logs.Options{Store: openStore(b, b.TempDir(), "bench-passphrase-0123456789"), Log: quiet,
		QueueSize: 1 << 16})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			lg.Record(benchRecord(i))
			i++
		}
	})
	b.StopTimer()
	if st := lg.WriterStats(); st.Dropped != 0 {
		b.Fatalf("dropped %d", st.Dropped)
	}
}

// BenchmarkWriteThroughput measures records committed per second end to
// end: hand-over, JSON encoding, AES-GCM sealing and Badger batch commits
// (SyncWrites off, as the server runs the logs store).
func BenchmarkWriteThroughput(b *testing.B) {
	lg, err := logs.New(logs.Options{Store: openStore(b, b.TempDir(), "bench-passphrase-0123456789"), Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		lg.Record(benchRecord(i))
	}
	if err := lg.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	if st := lg.WriterStats(); st.Written != int64(b.N) {
		b.Fatalf("written %d of %d", st.Written, b.N)
	}
}

// BenchmarkQueryPage is GET /api/logs's work for a filtered page over 20k
// records (a provider filter forces every record of the window decoded).
func BenchmarkQueryPage(b *testing.B) {
	lg, err := logs.New(logs.Options{Store: openStore(b, b.TempDir(), ""), Log: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer lg.Close()
	data := dataset(20_000)
	for i := range data {
		r := data[i]
		lg.Record(&r)
	}
	ctx := context.Background()
	_ = lg.Flush(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := lg.Query(ctx, logs.Filter{Providers: []string{"groq"}}, logs.Page{Limit: 50})
		if err != nil || res.TotalCount != 5000 {
			b.Fatalf("%v %d", err, res.TotalCount)
		}
	}
}
