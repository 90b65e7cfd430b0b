package logs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmgate/gateway/host/internal/testgw"
	"github.com/wasmgate/gateway/host/logs"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	providers = []string{"openai", "anthropic", "groq", "mistral"}
	models    = []string{"gpt-4o", "claude-3", "llama-3"}
)

// dataset is a known set of records: every field a filter or a stats figure
// reads varies with i in a way the tests can recompute.
func dataset(n int) []logs.Record {
	out := make([]logs.Record, n)
	for i := range out {
		r := logs.Record{
			ID:               fmt.Sprintf("rec-%04d", i),
			Timestamp:        t0.Add(time.Duration(i) * time.Second),
			Object:           "chat.completion",
			Route:            "/v1/chat/completions",
			Provider:         providers[i%len(providers)],
			Model:            models[i%len(models)],
			StatusCode:       200,
			LatencyMS:        float64(i),
			PromptTokens:     int64(i),
			CompletionTokens: int64(2 * i),
			Cost:             float64(i) / 1000,
			KeyID:            fmt.Sprintf("key-%d", i%2),
			VirtualKeyID:     fmt.Sprintf("vk-%d", i%5),
			Input:            fmt.Sprintf(`{"messages":[{"role":"user","content":"hello %d"}]}`, i),
			Output:           "plain answer",
		}
		if i%7 == 0 {
			r.Input = fmt.Sprintf(`{"messages":[{"role":"user","content":"find the NEEDLE %d"}]}`, i)
		}
		if i%10 == 0 {
			r.StatusCode = 502
			r.Error = &logs.ErrorInfo{Type: "upstream_error", Code: "bad_gateway", Message: fmt.Sprintf("upstream timeout %d", i)}
		}
		if i%25 == 0 {
			r.Object = "embedding"
		}
		out[i] = r
	}
	return out
}

func status(r logs.Record) string {
	if r.Error != nil {
		return "error"
	}
	return "success"
}

// gateway starts a real server with content capture and records the data set.
func gateway(t *testing.T, n int, env ...string) (*testgw.Gateway, []logs.Record) {
	t.Helper()
	// Retention off: the data set is dated 2026-01-01, which the pruner
	// would otherwise delete on start-up on a machine whose clock is later.
	g := testgw.New(t, append([]string{"GATEWAY_LOGS__CAPTURE_CONTENT=true", "GATEWAY_LOGS__RETENTION_DAYS=0"}, env...)...)
	data := dataset(n)
	for i := range data {
		r := data[i] // the logger owns what it is given
		g.Server.Logs().Record(&r)
	}
	if err := g.Server.Logs().Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return g, data
}

type listBody struct {
	Logs       []logs.Record `json:"logs"`
	Count      int           `json:"count"`
	TotalCount int           `json:"total_count"`
	Limit      int           `json:"limit"`
	Offset     int           `json:"offset"`
	HasMore    bool          `json:"has_more"`
	NextCursor string        `json:"next_cursor"`
	Truncated  bool          `json:"truncated"`
}

func list(t *testing.T, g *testgw.Gateway, query string) listBody {
	t.Helper()
	r := g.Do("GET", "/api/logs?"+query, nil)
	if r.Status != 200 {
		t.Fatalf("GET /api/logs?%s: %d %s", query, r.Status, r.Body)
	}
	var b listBody
	if err := json.Unmarshal(r.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func ids(recs []logs.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.ID
	}
	return out
}

// want lists the ids of data matching keep, newest first.
func want(data []logs.Record, keep func(i int, r logs.Record) bool) []string {
	var out []string
	for i := len(data) - 1; i >= 0; i-- {
		if keep(i, data[i]) {
			out = append(out, data[i].ID)
		}
	}
	return out
}

func TestListFilters(t *testing.T) {
	g, data := gateway(t, 300)
	ts := func(i int) string {
		return url.QueryEscape(t0.Add(time.Duration(i) * time.Second).Format(time.RFC3339Nano))
	}
	cases := []struct {
		name, query string
		keep        func(i int, r logs.Record) bool
	}{
		{"all", "", func(int, logs.Record) bool { return true }},
		{"time range inclusive", "start_time=" + ts(100) + "&end_time=" + ts(149), func(i int, _ logs.Record) bool { return i >= 100 && i <= 149 }},
		{"start only", "start_time=" + ts(250), func(i int, _ logs.Record) bool { return i >= 250 }},
		{"end only", "end_time=" + ts(9), func(i int, _ logs.Record) bool { return i <= 9 }},
		{"provider", "providers=groq", func(_ int, r logs.Record) bool { return r.Provider == "groq" }},
		{"providers list", "providers=groq,%20openai", func(_ int, r logs.Record) bool { return r.Provider == "groq" || r.Provider == "openai" }},
		{"model", "models=claude-3", func(_ int, r logs.Record) bool { return r.Model == "claude-3" }},
		{"object", "objects=embedding", func(_ int, r logs.Record) bool { return r.Object == "embedding" }},
		{"status error", "status=error", func(_ int, r logs.Record) bool { return status(r) == "error" }},
		{"status success", "status=success", func(_ int, r logs.Record) bool { return status(r) == "success" }},
		{"virtual key", "virtual_key_ids=vk-3", func(_ int, r logs.Record) bool { return r.VirtualKeyID == "vk-3" }},
		{"key id", "key_ids=key-1", func(_ int, r logs.Record) bool { return r.KeyID == "key-1" }},
		{"latency", "min_latency=20&max_latency=30.5", func(_ int, r logs.Record) bool { return r.LatencyMS >= 20 && r.LatencyMS <= 30.5 }},
		{"content search input", "content_search=needle", func(_ int, r logs.Record) bool { return strings.Contains(r.Input, "NEEDLE") }},
		{"content search error", "content_search=TIMEOUT%2020", func(_ int, r logs.Record) bool {
			return r.Error != nil && strings.Contains(r.Error.Message, "timeout 20")
		}},
		{"combined", "providers=openai&status=error&start_time=" + ts(50), func(i int, r logs.Record) bool {
			return i >= 50 && r.Provider == "openai" && status(r) == "error"
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp := want(data, c.keep)
			if len(exp) == 0 {
				t.Fatal("case matches nothing: a useless test")
			}
			b := list(t, g, c.query+"&limit=1000")
			if got := ids(b.Logs); strings.Join(got, ",") != strings.Join(exp, ",") {
				t.Fatalf("ids:\n got %v\nwant %v", got, exp)
			}
			if b.TotalCount != len(exp) || b.Count != len(exp) || b.HasMore || b.Truncated {
				t.Fatalf("counts: %+v, want %d", b, len(exp))
			}
		})
	}
}

func TestListShapeAndContent(t *testing.T) {
	g, data := gateway(t, 20)
	b := list(t, g, "limit=3")
	if b.Limit != 3 || b.Offset != 0 || b.Count != 3 || b.TotalCount != 20 || !b.HasMore || b.NextCursor == "" {
		t.Fatalf("list shape: %+v", b)
	}
	newest := b.Logs[0]
	if newest.ID != data[19].ID || newest.Input != "" {
		t.Fatalf("newest first without content by default: %+v", newest)
	}
	if newest.Status != "success" || newest.TotalTokens != 3*19 || !newest.Timestamp.Equal(data[19].Timestamp) {
		t.Fatalf("derived fields: %+v", newest)
	}
	b = list(t, g, "limit=1&include_content=true")
	if b.Logs[0].Input != data[19].Input {
		t.Fatalf("include_content: %+v", b.Logs[0])
	}
	// Defaults: limit 50.
	if b := list(t, g, ""); b.Limit != logs.DefaultLimit {
		t.Fatalf("default limit %d", b.Limit)
	}
	// Raw JSON uses snake_case and RFC 3339 UTC timestamps.
	raw := string(g.Do("GET", "/api/logs/"+data[10].ID, nil).Body)
	for _, s := range []string{`"timestamp":"2026-01-01T00:00:10Z"`, `"status":"error"`, `"status_code":502`,
		`"virtual_key_id":"vk-0"`, `"error":{"type":"upstream_error"`, `"latency_ms":10`, `"input":`} {
		if !strings.Contains(raw, s) {
			t.Fatalf("GET by id lacks %s: %s", s, raw)
		}
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/logs/nope", nil), 404, "not_found")
}

func TestPagination(t *testing.T) {
	g, data := gateway(t, 103)
	all := want(data, func(int, logs.Record) bool { return true })
	asc := append([]string(nil), all...)
	sort.Strings(asc)

	for _, order := range []string{"desc", "asc"} {
		exp := all
		if order == "asc" {
			exp = asc
		}
		// Offset paging.
		var got []string
		for off := 0; ; off += 10 {
			b := list(t, g, fmt.Sprintf("order=%s&limit=10&offset=%d", order, off))
			if b.TotalCount != len(data) {
				t.Fatalf("total_count %d", b.TotalCount)
			}
			got = append(got, ids(b.Logs)...)
			if !b.HasMore {
				break
			}
		}
		if strings.Join(got, ",") != strings.Join(exp, ",") {
			t.Fatalf("%s offset pages:\n got %v\nwant %v", order, got, exp)
		}
		// Cursor paging.
		got = nil
		cursor := ""
		for pages := 0; ; pages++ {
			b := list(t, g, fmt.Sprintf("order=%s&limit=10&after=%s", order, url.QueryEscape(cursor)))
			got = append(got, ids(b.Logs)...)
			if !b.HasMore {
				if b.NextCursor != "" {
					t.Fatalf("last page has a cursor: %+v", b)
				}
				break
			}
			cursor = b.NextCursor
			if pages > 20 {
				t.Fatal("cursor paging does not end")
			}
		}
		if strings.Join(got, ",") != strings.Join(exp, ",") {
			t.Fatalf("%s cursor pages:\n got %v\nwant %v", order, got, exp)
		}
	}
	// A cursor combined with a filter and a time window.
	b := list(t, g, "providers=openai&limit=5")
	b2 := list(t, g, "providers=openai&limit=5&after="+url.QueryEscape(b.NextCursor))
	exp := want(data, func(_ int, r logs.Record) bool { return r.Provider == "openai" })
	if got := append(ids(b.Logs), ids(b2.Logs)...); strings.Join(got, ",") != strings.Join(exp[:10], ",") {
		t.Fatalf("filtered cursor: %v want %v", got, exp[:10])
	}
}

type statsBody struct {
	TotalRequests    int     `json:"total_requests"`
	SuccessCount     int     `json:"success_count"`
	ErrorCount       int     `json:"error_count"`
	SuccessRate      float64 `json:"success_rate"`
	AverageLatencyMS float64 `json:"average_latency_ms"`
	P50              float64 `json:"p50_latency_ms"`
	P95              float64 `json:"p95_latency_ms"`
	P99              float64 `json:"p99_latency_ms"`
	TotalTokens      int64   `json:"total_tokens"`
	TotalCost        float64 `json:"total_cost"`
	ByProvider       map[string]struct {
		Requests    int     `json:"requests"`
		SuccessRate float64 `json:"success_rate"`
		TotalTokens int64   `json:"total_tokens"`
		TotalCost   float64 `json:"total_cost"`
	} `json:"by_provider"`
	ByModel map[string]struct {
		Requests int `json:"requests"`
	} `json:"by_model"`
	Truncated bool `json:"truncated"`
}

func TestStatsExact(t *testing.T) {
	g, _ := gateway(t, 200)
	r := g.Do("GET", "/api/logs/stats", nil)
	var s statsBody
	if err := json.Unmarshal(r.Body, &s); err != nil || r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	// i = 0..199: latency i, tokens 3i, cost i/1000, errors at i%10==0.
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if s.TotalRequests != 200 || s.ErrorCount != 20 || s.SuccessCount != 180 || !near(s.SuccessRate, 0.9) {
		t.Fatalf("counts: %+v", s)
	}
	if !near(s.AverageLatencyMS, 99.5) || s.P50 != 99 || s.P95 != 189 || s.P99 != 197 {
		t.Fatalf("latency (nearest rank): avg %v p50 %v p95 %v p99 %v", s.AverageLatencyMS, s.P50, s.P95, s.P99)
	}
	if s.TotalTokens != 3*199*200/2 || !near(s.TotalCost, 19.9) || s.Truncated {
		t.Fatalf("tokens %d cost %v", s.TotalTokens, s.TotalCost)
	}
	// openai: i%4==0 -> 50 records, errors where i%20==0 -> 10.
	op := s.ByProvider["openai"]
	sum := 0
	for i := 0; i < 200; i += 4 {
		sum += i
	}
	if op.Requests != 50 || !near(op.SuccessRate, 0.8) || op.TotalTokens != int64(3*sum) || !near(op.TotalCost, float64(sum)/1000) {
		t.Fatalf("by_provider openai: %+v", op)
	}
	if len(s.ByModel) != 3 || s.ByModel["gpt-4o"].Requests != 67 || s.ByModel["claude-3"].Requests != 67 || s.ByModel["llama-3"].Requests != 66 {
		t.Fatalf("by_model: %+v", s.ByModel)
	}
	// Filters apply to stats too.
	r = g.Do("GET", "/api/logs/stats?providers=groq&status=error", nil)
	_ = json.Unmarshal(r.Body, &s)
	if s.TotalRequests != 10 || s.SuccessRate != 0 { // i%4==2 and i%10==0 -> i%20==10
		t.Fatalf("filtered stats: %+v", s)
	}
}

func TestBadParameters(t *testing.T) {
	g, _ := gateway(t, 3)
	cases := []struct{ path, param string }{
		{"/api/logs?start_time=yesterday", "start_time"},
		{"/api/logs?end_time=2026-13-01T00:00:00Z", "end_time"},
		{"/api/logs?start_time=2026-02-01T00:00:00Z&end_time=2026-01-01T00:00:00Z", "end_time"},
		{"/api/logs?status=ok", "status"},
		{"/api/logs?limit=0", "limit"},
		{"/api/logs?limit=1001", "limit"},
		{"/api/logs?limit=ten", "limit"},
		{"/api/logs?offset=-1", "offset"},
		{"/api/logs?order=up", "order"},
		{"/api/logs?min_latency=-3", "min_latency"},
		{"/api/logs?max_latency=NaN", "max_latency"},
		{"/api/logs?min_latency=10&max_latency=5", "max_latency"},
		{"/api/logs?after=zz", "after"},
		{"/api/logs?include_content=maybe", "include_content"},
		{"/api/logs?provider=openai", "provider"},
		{"/api/logs/stats?limit=5", "limit"},
		{"/api/logs/stats?start_time=1", "start_time"},
	}
	for _, c := range cases {
		m := testgw.WantEnvelope(t, g.Do("GET", c.path, nil), 400, "")
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("%s: param %v, want %s", c.path, p, c.param)
		}
	}
	for _, c := range []struct{ path, param string }{
		{"/api/logs", "older_than"},
		{"/api/logs?older_than=soon", "older_than"},
		{"/api/logs?older_than=-5d", "older_than"},
		{"/api/logs?status=bad", "status"},
	} {
		m := testgw.WantEnvelope(t, g.Do("DELETE", c.path, nil), 400, "")
		if p := m["error"].(map[string]any)["param"]; p != c.param {
			t.Errorf("DELETE %s: param %v, want %s", c.path, p, c.param)
		}
	}
}

func TestDelete(t *testing.T) {
	g, data := gateway(t, 100)
	r := g.Do("DELETE", "/api/logs?providers=groq", nil)
	if r.Status != 200 || r.JSON(t)["deleted"].(float64) != 25 {
		t.Fatalf("delete groq: %d %s", r.Status, r.Body)
	}
	if b := list(t, g, "providers=groq"); b.TotalCount != 0 {
		t.Fatalf("groq left: %d", b.TotalCount)
	}
	testgw.WantEnvelope(t, g.Do("GET", "/api/logs/"+data[2].ID, nil), 404, "not_found") // 2%4 == 2: groq
	if b := list(t, g, "limit=1"); b.TotalCount != 75 {
		t.Fatalf("left: %d", b.TotalCount)
	}
	// older_than: the data set is in 2026-01-01, far older than 1 day.
	r = g.Do("DELETE", "/api/logs?older_than=1d&models=gpt-4o", nil)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	n, _ := g.Server.Logs().Count(context.Background())
	exp := len(want(data, func(_ int, r logs.Record) bool { return r.Provider != "groq" && r.Model != "gpt-4o" }))
	if n != exp {
		t.Fatalf("count after deletes %d, want %d", n, exp)
	}
}

func TestPermissionsDeclared(t *testing.T) {
	g := testgw.New(t)
	wantPerm := map[string]string{"GET /api/logs": "Logs:View", "GET /api/logs/stats": "Logs:View",
		"GET /api/logs/:id": "Logs:View", "DELETE /api/logs": "Logs:Delete"}
	for _, r := range g.Server.Routes() {
		k := r.Method + " " + r.Path
		if p, ok := wantPerm[k]; ok {
			if r.Permission != p {
				t.Errorf("%s: %s, want %s", k, r.Permission, p)
			}
			delete(wantPerm, k)
		}
	}
	if len(wantPerm) > 0 {
		t.Fatalf("routes missing: %v", wantPerm)
	}
	g.Auth = testgw.NoAuth
	testgw.WantEnvelope(t, g.Do("GET", "/api/logs", nil), 401, "")
}

func TestContentOffByDefault(t *testing.T) {
	g := testgw.New(t)
	lg := g.Server.Logs()
	if lg.CaptureContent() {
		t.Fatal("capture on by default")
	}
	lg.Record(&logs.Record{ID: "c1", Provider: "openai", Input: "secret prompt", Output: "secret answer"})
	if err := lg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := g.Do("GET", "/api/logs/c1", nil)
	if r.Status != 200 || strings.Contains(string(r.Body), "secret") {
		t.Fatalf("content stored with capture off: %s", r.Body)
	}
}

func TestContentCapCut(t *testing.T) {
	g := testgw.New(t, "GATEWAY_LOGS__CAPTURE_CONTENT=true", "GATEWAY_LOGS__MAX_CONTENT_BYTES=10")
	g.Server.Logs().Record(&logs.Record{ID: "c1", Input: strings.Repeat("a", 50), Output: "short"})
	_ = g.Server.Logs().Flush(context.Background())
	var r logs.Record
	_ = json.Unmarshal(g.Do("GET", "/api/logs/c1", nil).Body, &r)
	if r.Input != strings.Repeat("a", 10) || r.Output != "short" || !r.ContentTruncated {
		t.Fatalf("cut: %+v", r)
	}
}

func TestDisabled(t *testing.T) {
	g := testgw.New(t, "GATEWAY_LOGS__ENABLED=false")
	if g.Server.Logs() != nil {
		t.Fatal("logger provisioned while disabled")
	}
	g.Server.Logs().Record(&logs.Record{}) // a nil logger is a no-op
	testgw.WantEnvelope(t, g.Do("GET", "/api/logs", nil), 503, "logs_disabled")
	if _, err := os.Stat(filepath.Join(g.Config.DataDir, "logs")); !os.IsNotExist(err) {
		t.Fatalf("logs store opened while disabled: %v", err)
	}
}

func TestMetricsExposed(t *testing.T) {
	g, _ := gateway(t, 5)
	body := string(g.Do("GET", "/metrics", nil).Body)
	for _, s := range []string{"wasmgate_logs_records_written_total 5", "wasmgate_logs_queue_depth 0", "wasmgate_logs_batch_size_count"} {
		if !strings.Contains(body, s) {
			t.Fatalf("metrics lack %q", s)
		}
	}
}

// TestFlushOnShutdown: everything Record accepted before a graceful
// shutdown is in the store after a restart, with no explicit Flush.
func TestFlushOnShutdown(t *testing.T) {
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Dir: dir, Env: []string{"GATEWAY_LOGS__FLUSH_INTERVAL=1m", "GATEWAY_LOGS__BATCH_SIZE=10000"}})
	for i := 0; i < 5000; i++ {
		g.Server.Logs().Record(&logs.Record{Provider: "openai", Model: "gpt-4o", LatencyMS: float64(i)})
	}
	g.Close()
	g2 := testgw.Start(t, testgw.Options{Dir: dir})
	n, err := g2.Server.Logs().Count(context.Background())
	if err != nil || n != 5000 {
		t.Fatalf("after restart: %d records (%v), want 5000", n, err)
	}
}

// TestConcurrentRecordsAllStored: 50 goroutines x 200 records through a
// deliberately small queue, so backpressure is exercised: none may be lost.
func TestConcurrentRecordsAllStored(t *testing.T) {
	g := testgw.New(t, "GATEWAY_LOGS__QUEUE_SIZE=64", "GATEWAY_LOGS__BATCH_SIZE=50", "GATEWAY_LOGS__ENQUEUE_TIMEOUT=30s")
	lg := g.Server.Logs()
	var wg sync.WaitGroup
	for w := 0; w < 50; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				lg.Record(&logs.Record{Provider: providers[w%4], Model: "m", VirtualKeyID: fmt.Sprint("vk-", w), LatencyMS: float64(i)})
			}
		}()
	}
	wg.Wait()
	if err := lg.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	n, err := lg.Count(context.Background())
	if err != nil || n != 10_000 {
		t.Fatalf("stored %d (%v), want 10000", n, err)
	}
	if st := lg.WriterStats(); st.Dropped != 0 || st.Written != 10_000 {
		t.Fatalf("writer stats: %+v", st)
	}
	if b := list(t, g, "virtual_key_ids=vk-7&limit=1000"); b.TotalCount != 200 {
		t.Fatalf("vk-7: %d", b.TotalCount)
	}
}

func TestEncryptedAtRest(t *testing.T) {
	dir := t.TempDir()
	g := testgw.Start(t, testgw.Options{Dir: dir, Env: []string{"GATEWAY_ENCRYPTION_KEY=0123456789abcdef-passphrase",
		"GATEWAY_LOGS__CAPTURE_CONTENT=true"}})
	marker := "PLAINTEXT-MARKER-7c1d"
	for i := 0; i < 50; i++ {
		g.Server.Logs().Record(&logs.Record{Provider: "openai", Input: marker, Output: marker})
	}
	g.Close()
	err := filepath.Walk(filepath.Join(dir, "logs"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(raw, []byte(marker)) || bytes.Contains(raw, []byte("openai")) {
			return fmt.Errorf("%s holds plaintext", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
