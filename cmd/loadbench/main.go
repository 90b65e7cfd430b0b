// Command loadbench is `make bench`: it starts the mock upstream, nginx as a
// reverse-proxy floor and the gateway, drives each with the same closed-loop
// load, and reports added latency, throughput relative to nginx, the
// gateway's CPU time per request and peak RSS, and whether every request of
// the run reached the request log. Everything binds 127.0.0.1.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"

	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type scenario struct {
	name   string
	path   string // request path on the target
	body   string
	stream bool
	// floorPath is the path on nginx/direct (the same wire the upstream speaks).
	floorPath string
	floorBody string
}

const chatOpenAI = `{"model":"openai/gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]%s}`
const chatUpstream = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]%s}`
const chatAnthropicGW = `{"model":"anthropic/claude-3-5-haiku","max_tokens":256,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]%s}`
const anthropicNative = `{"model":"claude-3-5-haiku","max_tokens":256,"system":"You are a helpful assistant.","messages":[{"role":"user","content":"Summarise the benefits of a gateway in front of model providers in two sentences, please."}]%s}`

func scenarios() []scenario {
	return []scenario{
		{name: "openai passthrough", path: "/v1/chat/completions", body: fmt.Sprintf(chatOpenAI, ""),
			floorPath: "/v1/chat/completions", floorBody: fmt.Sprintf(chatUpstream, "")},
		{name: "openai passthrough stream", path: "/v1/chat/completions", body: fmt.Sprintf(chatOpenAI, `,"stream":true`), stream: true,
			floorPath: "/v1/chat/completions", floorBody: fmt.Sprintf(chatUpstream, `,"stream":true`)},
		{name: "anthropic translated", path: "/v1/chat/completions", body: fmt.Sprintf(chatAnthropicGW, ""),
			floorPath: "/anthropic/v1/messages", floorBody: fmt.Sprintf(anthropicNative, "")},
		{name: "anthropic translated stream", path: "/v1/chat/completions", body: fmt.Sprintf(chatAnthropicGW, `,"stream":true`), stream: true,
			floorPath: "/anthropic/v1/messages", floorBody: fmt.Sprintf(anthropicNative, `,"stream":true`)},
	}
}

// onlyScenario narrows a run to matching scenarios (-only).
var onlyScenario string

// profileDir, when set, receives a CPU profile of the gateway for each
// gateway measurement (see startProfile).
var profileDir string

// gatewayEnv is extra environment given to the gateway process alone.
var gatewayEnv []string

// startProfile fetches a CPU profile from the gateway's pprof listener
// covering most of one measurement and writes it to profileDir/name.pprof;
// the returned func waits for it. It is a no-op without -pprof.
func startProfile(port int, dur time.Duration, name string) func() {
	if profileDir == "" || port == 0 {
		return func() {}
	}
	secs := max(int(dur/time.Second)-1, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/profile?seconds=%d", port, secs)
		resp, err := http.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pprof:", err)
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			fmt.Fprintln(os.Stderr, "pprof:", err)
			return
		}
		file := filepath.Join(profileDir, strings.NewReplacer(" ", "_", "/", "_").Replace(name)+".pprof")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "pprof:", err)
		}
	}()
	return func() { <-done }
}

type result struct {
	warmups  int64
	requests int64
	errors   int64
	firstErr string
	rps      float64
	p50, p99 time.Duration
	// lats and elapsed are what rps and the percentiles come from, kept so
	// that the rounds of one measurement can be merged.
	lats    []time.Duration
	elapsed time.Duration
}

// merge adds b's round to r and recomputes its rate and percentiles.
func (r *result) merge(b result) {
	r.warmups += b.warmups
	r.requests += b.requests
	r.errors += b.errors
	if r.firstErr == "" {
		r.firstErr = b.firstErr
	}
	r.lats = append(r.lats, b.lats...)
	r.elapsed += b.elapsed
	r.summarise()
}

func (r *result) summarise() {
	slices.Sort(r.lats)
	if r.elapsed > 0 {
		r.rps = float64(r.requests) / r.elapsed.Seconds()
	}
	if n := len(r.lats); n > 0 {
		r.p50, r.p99 = r.lats[n/2], r.lats[n*99/100]
	}
}

func main() {
	bin := flag.String("bin", "bin", "directory with gateway, mockupstream and plugins/")
	dur := flag.Duration("duration", 8*time.Second, "load duration per measurement")
	rounds := flag.Int("rounds", 4, "rounds each measurement is split into, direct, nginx and gateway taking turns (the machine's speed drifts within seconds)")
	soak := flag.Duration("soak", 5*time.Minute, "soak duration at concurrency 64 on the passthrough path (0 skips)")
	out := flag.String("out", "BENCHMARKS.md", "file whose load-benchmark section is replaced with the results")
	concs := flag.String("concurrency", "1,64", "comma-separated concurrency levels")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	gwEnv := flag.String("gateway-env", "", "extra environment for the gateway process only, comma-separated (e.g. GOMEMLIMIT=128MiB)")
	pprofDir := flag.String("pprof", "", "directory to write a CPU profile of the gateway per gateway measurement (off when empty)")
	flag.Parse()
	onlyScenario = *only
	profileDir = *pprofDir
	if profileDir != "" {
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "loadbench:", err)
			os.Exit(1)
		}
	}
	if *gwEnv != "" {
		gatewayEnv = strings.Split(*gwEnv, ",")
	}
	if err := run(*bin, *dur, max(*rounds, 1), *soak, *out, *concs); err != nil {
		fmt.Fprintln(os.Stderr, "loadbench:", err)
		os.Exit(1)
	}
}

func run(bin string, dur time.Duration, rounds int, soak time.Duration, out, concList string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "loadbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var levels []int
	for _, c := range strings.Split(concList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 {
			return fmt.Errorf("bad concurrency %q", c)
		}
		levels = append(levels, n)
	}

	mockPort, nginxPort, gwPort := freePort(), freePort(), freePort()
	mock, err := startProc(tmp, "mock", filepath.Join(bin, "mockupstream"), "-port", strconv.Itoa(mockPort))
	if err != nil {
		return err
	}
	defer mock.stop()
	mockURL := fmt.Sprintf("http://127.0.0.1:%d", mockPort)
	if err := waitHTTP(mockURL+"/v1/models", map[string]string{"Authorization": "Bearer sk-bench"}); err != nil {
		return fmt.Errorf("mock upstream: %w", err)
	}

	nginx, err := startNginx(tmp, nginxPort, mockPort)
	if err != nil {
		return err
	}
	defer nginx.stop()
	nginxURL := fmt.Sprintf("http://127.0.0.1:%d", nginxPort)
	if err := waitHTTP(nginxURL+"/v1/models", map[string]string{"Authorization": "Bearer sk-bench"}); err != nil {
		return fmt.Errorf("nginx: %w", err)
	}

	cfgPath := filepath.Join(tmp, "gateway.yaml")
	cfg := fmt.Sprintf(`providers:
  openai:
    network_config: {base_url: "%[1]s/v1"}
    keys: [{name: bench, value: sk-bench}]
  anthropic:
    network_config: {base_url: "%[1]s/anthropic/v1"}
    keys: [{name: bench, value: sk-bench}]
logs:
  max_scan_records: 100000000
`, mockURL)
	// pprof serves the CPU profiles (-pprof) and the soak's live-heap and
	// goroutine counts.
	pprofPort := freePort()
	cfg += fmt.Sprintf("pprof_addr: 127.0.0.1:%d\n", pprofPort)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	gw, err := startProc(tmp, "gateway", filepath.Join(bin, "gateway"), "--config", cfgPath, "--port", strconv.Itoa(gwPort),
		"--data-dir", filepath.Join(tmp, "data"), "--log-level", "warn")
	if err != nil {
		return err
	}
	defer gw.stop()
	gwURL := fmt.Sprintf("http://127.0.0.1:%d", gwPort)
	if err := waitHTTP(gwURL+"/health", nil); err != nil {
		return fmt.Errorf("gateway: %w\n%s", err, gw.logTail())
	}

	hdr := map[string]string{"Authorization": "Bearer sk-bench", "Content-Type": "application/json", "x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
	var rows []string
	var gwRequests int64
	fmt.Printf("%-30s %5s %10s %10s %10s %12s %8s %8s %10s\n", "scenario", "conc", "target", "rps", "p50", "p99", "+p50", "+p99", "cpu/req")
	for _, sc := range scenarios() {
		if onlyScenario != "" && !strings.Contains(sc.name, onlyScenario) {
			continue
		}
		for _, conc := range levels {
			// The three targets take turns in short rounds, so a change in
			// the machine's speed (it is shared) weighs on all three alike
			// instead of on whichever ran during it.
			var direct, floor, g result
			var gwCPU, nginxCPU time.Duration
			prof := startProfile(pprofPort, 3*dur, fmt.Sprintf("%s-c%d", sc.name, conc))
			slice := dur / time.Duration(rounds)
			for range rounds {
				direct.merge(load(mockURL+sc.floorPath, sc.floorBody, hdr, conc, slice))
				ncpu0 := nginx.treeCPU()
				floor.merge(load(nginxURL+sc.floorPath, sc.floorBody, hdr, conc, slice))
				nginxCPU += nginx.treeCPU() - ncpu0
				cpu0 := gw.cpu()
				g.merge(load(gwURL+sc.path, sc.body, hdr, conc, slice))
				gwCPU += gw.cpu() - cpu0
			}
			prof()
			gwRequests += g.requests + g.errors + g.warmups
			cpuPer, nginxPer := time.Duration(0), time.Duration(0)
			if g.requests > 0 {
				cpuPer = gwCPU / time.Duration(g.requests)
			}
			if floor.requests > 0 {
				nginxPer = nginxCPU / time.Duration(floor.requests)
			}
			for _, r := range []struct {
				n string
				r result
			}{{"direct", direct}, {"nginx", floor}, {"gateway", g}} {
				extra := ""
				if r.n == "nginx" {
					extra = fmt.Sprintf("%8s %8s %10s", "", "", fmtD(nginxPer))
				}
				if r.n == "gateway" {
					extra = fmt.Sprintf("%8s %8s %10s  peak %s", fmtD(g.p50-direct.p50), fmtD(g.p99-direct.p99), fmtD(cpuPer), mib(gw.peakRSS()))
				}
				fmt.Printf("%-30s %5d %10s %10.0f %10s %12s %s\n", sc.name, conc, r.n, r.r.rps, fmtD(r.r.p50), fmtD(r.r.p99), extra)
				if r.r.errors > 0 {
					fmt.Printf("    %d errors, first: %s\n", r.r.errors, r.r.firstErr)
				}
			}
			ratio := 0.0
			if floor.rps > 0 {
				ratio = g.rps / floor.rps
			}
			// VmHWM only rises, so the row where it jumps is the phase
			// that set the peak.
			rows = append(rows, fmt.Sprintf("| %s | %d | %.0f | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %d |",
				sc.name, conc, direct.rps, floor.rps, g.rps, ratio, fmtD(g.p50-direct.p50), fmtD(g.p99-direct.p99),
				fmtD(floor.p50-direct.p50), fmtD(cpuPer), fmtD(nginxPer), mib(gw.peakRSS()), g.errors))
		}
	}

	peakScenarios := gw.peakRSS()
	var soakLine string
	peakSoak := peakScenarios
	if soak > 0 {
		anon0, file0 := gw.status("RssAnon"), gw.status("RssFile")
		rss0 := gw.rss()
		start := time.Now()
		var samples []int64
		// A leak shows as growth of the heap that survives a collection
		// and of the goroutine count, both read under load after the
		// warm-up quarter and just before the end.
		var live [2]runtimeCounts
		stop, sampled := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sampled)
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			early, late := time.After(soak/4), time.After(soak-5*time.Second)
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					samples = append(samples, gw.rss())
				case <-early:
					live[0] = gatewayCounts(pprofPort)
				case <-late:
					live[1] = gatewayCounts(pprofPort)
				}
			}
		}()
		s := load(gwURL+scenarios()[0].path, scenarios()[0].body, hdr, 64, soak)
		close(stop)
		<-sampled
		gwRequests += s.requests + s.errors + s.warmups
		rss1 := gw.rss()
		// The heap is a sawtooth (a collection every few hundred ms at
		// this rate), so single readings differ by several MiB: compare
		// the median of the second quarter (after warm-up) with the
		// median of the last quarter, which a leak would still raise.
		first, last := rss0, rss1
		lo, hi := min(rss0, rss1), max(rss0, rss1)
		if n := len(samples); n >= 8 {
			first, last = median(samples[n/4:n/2]), median(samples[3*n/4:])
			lo, hi = slices.Min(samples[n/4:]), slices.Max(samples[n/4:])
		}
		anon1, file1 := gw.status("RssAnon"), gw.status("RssFile")
		peakSoak = gw.peakRSS()
		soakLine = fmt.Sprintf("Soak: %s at concurrency 64 on the passthrough path: %d requests (%.0f rps, %d errors); live heap after a forced collection %s after the first quarter -> %s 5 s before the end, goroutines %d -> %d; RSS (median of 10 s samples) %s in the second quarter -> %s in the last quarter (%+.1f%%), range %s-%s after warm-up; anonymous memory (heap, stacks) %s -> %s, file-backed (mapped store files) %s -> %s from start to end.",
			time.Since(start).Round(time.Second), s.requests, s.rps, s.errors, mib(live[0].heap), mib(live[1].heap), live[0].goroutines, live[1].goroutines,
			mib(first), mib(last), 100*float64(last-first)/float64(max(first, 1)),
			mib(lo), mib(hi), mib(anon0), mib(anon1), mib(file0), mib(file1))
		fmt.Println(soakLine)
	}

	if profileDir != "" && pprofPort != 0 {
		// The heap at the end of the run: what holds the anonymous memory.
		if resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", pprofPort)); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = os.WriteFile(filepath.Join(profileDir, "heap.pprof"), b, 0o644)
		}
	}
	logged, err := loggedRequests(gwURL)
	if err != nil {
		return fmt.Errorf("count logs: %w", err)
	}
	peak := gw.peakRSS()
	summary := fmt.Sprintf("Gateway peak RSS: %s (%s after the scenarios, %s after the soak, %s after the final log count; at the end: anonymous %s, file-backed %s). Requests sent to the gateway: %d; request-log records: %d (%s).",
		mib(peak), mib(peakScenarios), mib(peakSoak), mib(peak), mib(gw.status("RssAnon")), mib(gw.status("RssFile")), gwRequests, logged, map[bool]string{true: "none lost", false: "MISMATCH"}[logged == gwRequests])
	fmt.Println(summary)

	section := "## Load benchmark (`make bench`)\n\n" +
		fmt.Sprintf("Run %s, %s per measurement in %d rounds (direct, nginx and gateway take turns, so a drift in the shared machine's speed weighs on all three), closed loop; direct = client to the mock upstream, nginx = Debian nginx reverse proxy with upstream keep-alive (the floor), gateway = wasmgate with request logging on as shipped. Added latency is against direct. CPU/req is the process's user+system time divided by the requests it served (for nginx, the master's and its workers'); the machine's speed drifts, so compare the gateway's CPU with nginx's in the same row rather than across runs.\n\n",
			time.Now().UTC().Format("2006-01-02 15:04 UTC"), dur, rounds) +
		"| scenario | conc | direct rps | nginx rps | gateway rps | gateway/nginx | gw +p50 | gw +p99 | nginx +p50 | gw CPU/req | nginx CPU/req | gw peak RSS so far | gw errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n\n" + summary + "\n"
	if soakLine != "" {
		section += "\n" + soakLine + "\n"
	}
	return replaceSection(out, "## Load benchmark (`make bench`)", section)
}

// runtimeCounts is what a leak check reads from the gateway's runtime.
type runtimeCounts struct {
	heap       int64 // bytes live after a forced collection
	goroutines int
}

// gatewayCounts reads them through pprof: the heap profile with gc=1 runs
// a collection first, and its debug text carries the runtime's MemStats.
func gatewayCounts(port int) runtimeCounts {
	var c runtimeCounts
	get := func(path string) string {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := regexp.MustCompile(`# HeapAlloc = (\d+)`).FindStringSubmatch(get("/debug/pprof/heap?gc=1&debug=1")); m != nil {
		c.heap, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := regexp.MustCompile(`goroutine profile: total (\d+)`).FindStringSubmatch(get("/debug/pprof/goroutine?debug=1")); m != nil {
		c.goroutines, _ = strconv.Atoi(m[1])
	}
	return c
}

func fmtD(d time.Duration) string {
	if d < 0 {
		return "-" + fmtD(-d)
	}
	if d < time.Millisecond {
		return fmt.Sprintf("%dus", d.Microseconds())
	}
	return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// load runs conc closed-loop workers for dur and measures each request
// end to end (the whole body read, streams included).
func load(url, body string, hdr map[string]string, conc int, dur time.Duration) result {
	tr := &http.Transport{MaxIdleConns: conc * 2, MaxIdleConnsPerHost: conc * 2, DisableCompression: true}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	// Warm connections and caches outside the measurement (counted: the
	// gateway logs these requests too).
	for i := 0; i < conc; i++ {
		_ = once(client, url, body, hdr)
	}
	warm := int64(conc)
	var n, errs atomic.Int64
	var firstErr atomic.Value
	lats := make([][]time.Duration, conc)
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := once(client, url, body, hdr); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				lats[w] = append(lats[w], time.Since(t0))
				n.Add(1)
			}
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	r := result{requests: n.Load(), errors: errs.Load(), warmups: warm, lats: all, elapsed: elapsed}
	if e, ok := firstErr.Load().(string); ok {
		r.firstErr = e
	}
	r.summarise()
	return r
}

func once(client *http.Client, url, body string, hdr map[string]string) error {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	all, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	tail := all[max(0, len(all)-64):]
	if resp.StatusCode != 200 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	if resp.Header.Get("Content-Type") == "text/event-stream" && !strings.Contains(string(tail), "[DONE]") && !strings.Contains(string(tail), "message_stop") {
		return errors.New("stream ended without its terminator")
	}
	return nil
}

func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitHTTP(url string, hdr map[string]string) error {
	deadline := time.Now().Add(30 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Errorf("status %d", resp.StatusCode)
		} else {
			last = err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready: %v", url, last)
}

// loggedRequests asks the gateway's log stats how many requests it recorded.
func loggedRequests(gw string) (int64, error) {
	req, _ := http.NewRequest(http.MethodGet, gw+"/api/logs/stats", nil)
	req.Header.Set("X-Gateway-Setup-Token", benchSetupToken)
	// The writer flushes every 100 ms; give it a moment after the load.
	time.Sleep(time.Second)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var st struct {
		TotalRequests int64 `json:"total_requests"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("stats: %d %s", resp.StatusCode, raw)
	}
	return st.TotalRequests, nil
}

const benchSetupToken = "loadbench-setup-token-0123456789"

// proc is a child process whose CPU and memory the benchmark reads from /proc.
type proc struct {
	cmd *exec.Cmd
	log *bytes.Buffer
	mu  *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func startProc(dir, name, path string, args ...string) (*proc, error) {
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GATEWAY_SETUP_TOKEN="+benchSetupToken)
	if name == "gateway" {
		cmd.Env = append(cmd.Env, gatewayEnv...)
	}
	p := &proc{cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout = lockedWriter{p.mu, p.log}
	cmd.Stderr = lockedWriter{p.mu, p.log}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return p, nil
}

func (p *proc) logTail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.log.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// cpu is the process's user+system CPU time so far.
func (p *proc) cpu() time.Duration {
	_, t := statCPU(p.cmd.Process.Pid)
	return t
}

// treeCPU is cpu plus that of the process's live children: nginx's
// workers, which serve every request, are children of the master started.
func (p *proc) treeCPU() time.Duration {
	pid := p.cmd.Process.Pid
	total := p.cpu()
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		child, err := strconv.Atoi(d.Name())
		if err != nil || child == pid {
			continue
		}
		if ppid, t := statCPU(child); ppid == pid {
			total += t
		}
	}
	return total
}

// statCPU reads a process's parent and user+system CPU time from
// /proc/<pid>/stat (zero when it is gone).
func statCPU(pid int) (ppid int, cpu time.Duration) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields after the command name (which may hold spaces) start after ')'.
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	// Linux reports clock ticks; USER_HZ is 100 on every mainstream kernel.
	return ppid, time.Duration(ut+st) * 10 * time.Millisecond
}

func (p *proc) status(field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, field+":") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *proc) rss() int64     { return p.status("VmRSS") }
func (p *proc) peakRSS() int64 { return p.status("VmHWM") }

func startNginx(dir string, port, upstream int) (*proc, error) {
	path, err := exec.LookPath("nginx")
	if err != nil {
		for _, c := range []string{"/usr/sbin/nginx", "/usr/local/sbin/nginx"} {
			if _, serr := os.Stat(c); serr == nil {
				path, err = c, nil
			}
		}
	}
	if err != nil {
		return nil, errors.New("nginx not found: apt-get install -y nginx (make bench does it)")
	}
	conf := fmt.Sprintf(`worker_processes auto;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  upstream mock { server 127.0.0.1:%[3]d; keepalive 256; }
  server {
    listen 127.0.0.1:%[2]d;
    location / {
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }
}
`, dir, port, upstream)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return startProc(dir, "nginx", path, "-p", dir, "-c", cf)
}

// replaceSection swaps the section starting with heading (up to the next
// "## " heading) in file, or appends it.
func replaceSection(file, heading, section string) error {
	raw, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	s := string(raw)
	if i := strings.Index(s, heading); i >= 0 {
		rest := s[i+len(heading):]
		end := len(s)
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = i + len(heading) + j + 1
		}
		s = s[:i] + section + s[end:]
	} else {
		s = strings.TrimRight(s, "\n") + "\n\n" + section
	}
	return os.WriteFile(file, []byte(s), 0o644)
}

// median of xs (which it sorts).
func median(xs []int64) int64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
