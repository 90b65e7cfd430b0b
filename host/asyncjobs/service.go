// Package asyncjobs serves /v1/async/*: a request is accepted at once with
// a job id (202), run in the background through the same Fiber app as the
// sync route, and its result is polled with GET or announced by a signed
// webhook (spec: Async inference, Async job and webhook delivery, Events).
//
// Jobs live in the main store, which fsyncs every commit: a job is written
// before the 202 is sent, so an acknowledged job survives kill -9. The
// request-log store is not used because it batches writes without fsync
// (losing a log line on a crash is accepted there, losing a job is not), and
// because a job's terminal state must commit in the same transaction as its
// webhook delivery, which lives in the main store.
//
// Execution is at least once: a job that was running when the process died
// is run again after the restart, up to MaxAttempts runs.
package asyncjobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/store"
)

// Defaults of the async.* config keys.
const (
	DefaultWorkers       = 8
	DefaultResultTTL     = time.Hour
	DefaultJobTimeout    = 10 * time.Minute
	DefaultMaxAttempts   = 3
	DefaultPruneInterval = time.Minute
	DefaultPruneGrace    = time.Minute
	DefaultTombstoneTTL  = 24 * time.Hour
	DefaultMaxBacklog    = 10000
	pruneBatch           = 256
)

// Options configures a Service.
type Options struct {
	// Store is the main (fsync'd) store; it also holds webhook deliveries.
	Store store.Store
	// Webhooks queues deliveries for jobs submitted with x-gw-async-webhook.
	Webhooks *webhooks.Service
	// Log receives job and pruner messages.
	Log *slog.Logger
	// Now is the clock (tests inject one); time.Now when nil.
	Now func() time.Time
	// Workers is how many jobs run at once (async.workers).
	Workers int
	// ResultTTL is how long a terminal job's result can be fetched (async.result_ttl).
	ResultTTL time.Duration
	// JobTimeout bounds one run of a job (async.job_timeout).
	JobTimeout time.Duration
	// MaxAttempts is how many runs a job gets when restarts interrupt it (async.max_attempts).
	MaxAttempts int
	// PruneInterval is how often expired jobs are pruned (async.prune_interval).
	PruneInterval time.Duration
	// PruneGrace is how long after result_expires_at the result is kept
	// before the pruner drops it (async.prune_grace).
	PruneGrace time.Duration
	// TombstoneTTL is how long after result_expires_at an expired job still
	// answers 410 instead of 404 (async.tombstone_ttl).
	TombstoneTTL time.Duration
	// MaxBacklog caps the jobs accepted and not yet finished, queued or
	// running (async.max_backlog). Each holds its request body in the
	// store until it runs, so without a cap a client submitting faster
	// than upstreams answer would fill the disk; beyond it a submit gets
	// 429 async_backlog_full with Retry-After.
	MaxBacklog int
	// MaxBacklogPerCredential caps the unfinished jobs of one submitting
	// credential (async.max_backlog_per_credential; 0: none), so one
	// caller cannot take the whole backlog from the others.
	MaxBacklogPerCredential int
	// Registry, when set, receives the backlog gauge and the refusal counter.
	Registry prometheus.Registerer
	// CheckCaller, when set, vets the submitter's credentials before a job
	// is accepted (governance: an unknown or disabled virtual key is
	// refused at submit rather than failing the job later).
	CheckCaller func(c *fiber.Ctx) *apierr.Error
}

// Service is the async-jobs capability.
type Service struct {
	o   Options
	st  store.Store
	wh  *webhooks.Service
	log *slog.Logger
	now func() time.Time

	handler fasthttp.RequestHandler
	queue   fifo
	// backlog holds a place per job accepted and not finished, from the
	// submit (or recovery) until a worker is done with it.
	backlog *backlog
	// refused counts submits turned away by a full backlog, by reason.
	refused *prometheus.CounterVec

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started bool
	closed  bool
}

// New builds the capability. Routes can be mounted at once; jobs run only
// after Start, which needs the finished Fiber app.
func New(o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("asyncjobs: a store is required")
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.ResultTTL <= 0 {
		o.ResultTTL = DefaultResultTTL
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = DefaultJobTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = DefaultPruneInterval
	}
	if o.PruneGrace < 0 {
		o.PruneGrace = 0
	}
	if o.MaxBacklog <= 0 {
		o.MaxBacklog = DefaultMaxBacklog
	}
	if o.TombstoneTTL <= 0 {
		o.TombstoneTTL = DefaultTombstoneTTL
	}
	if o.MaxBacklogPerCredential < 0 {
		o.MaxBacklogPerCredential = 0
	}
	s := &Service{o: o, st: o.Store, wh: o.Webhooks, log: o.Log, now: o.Now, backlog: newBacklog()}
	s.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "wasmgate_async_submits_refused_total",
		Help: "Async submits refused with 429 by a full backlog: reason backlog_full (async.max_backlog) or credential_backlog_full (async.max_backlog_per_credential)."},
		[]string{"reason"})
	if o.Registry != nil {
		backlog := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "wasmgate_async_backlog", Help: "Async jobs accepted and not finished (queued or running)."},
			func() float64 { return float64(s.backlog.size()) })
		limit := prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wasmgate_async_backlog_limit", Help: "async.max_backlog: the most unfinished async jobs before submits get 429."})
		limit.Set(float64(o.MaxBacklog))
		for _, c := range []prometheus.Collector{backlog, limit, s.refused} {
			if err := o.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("asyncjobs: register metrics: %w", err)
			}
		}
	}
	s.queue.signal = make(chan struct{}, 1)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Start recovers unfinished jobs from the store and starts the workers and
// the pruner. handler is the gateway's Fiber app handler (app.Handler()),
// taken once every route is mounted: jobs run through it exactly like sync
// requests, so plugins, logs and metrics apply to them too.
func (s *Service) Start(handler fasthttp.RequestHandler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.closed {
		return errors.New("asyncjobs: already started or closed")
	}
	s.handler = handler
	var ids, creds []string
	err := s.st.View(s.ctx, func(tx store.Tx) error {
		return tx.Scan(nsPending, store.ScanOptions{}, func(key string, cred []byte) error {
			ids, creds = append(ids, key), append(creds, string(cred))
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("asyncjobs: recover pending jobs: %w", err)
	}
	if len(ids) > 0 {
		s.log.Info("async jobs: resuming unfinished jobs after start", "count", len(ids))
	}
	// Recovered jobs count against the backlog even beyond its caps: they
	// were acknowledged, so they run; new submits wait for room. A job
	// submitted before this scan is already queued.
	resumed := ids[:0]
	for i, id := range ids {
		if s.backlog.resume(id, creds[i]) {
			resumed = append(resumed, id)
		}
	}
	s.queue.push(resumed...)
	s.started = true
	for i := 0; i < s.o.Workers; i++ {
		s.wg.Add(1)
		go s.work()
	}
	s.wg.Add(1)
	go s.pruneLoop()
	return nil
}

// Close stops the workers and the pruner. A job cut short by Close keeps
// its running state and is run again after the next start.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}

// fifo is the in-memory run queue of job ids. The store's pending index is
// the durable truth; this only orders work within one process. Ids are
// small, so an unbounded slice is fine and submit never blocks on workers.
type fifo struct {
	mu     sync.Mutex
	items  []string
	signal chan struct{}
}

func (q *fifo) push(ids ...string) {
	if len(ids) == 0 {
		return
	}
	q.mu.Lock()
	q.items = append(q.items, ids...)
	q.mu.Unlock()
	q.notify()
}

func (q *fifo) notify() {
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *fifo) pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) == 0 {
		return "", false
	}
	id := q.items[0]
	q.items[0] = ""
	q.items = q.items[1:]
	if len(q.items) > 0 {
		// One signal wakes one worker: pass it on while work remains, so
		// every idle worker is woken by a burst of submits.
		q.notify()
	}
	return id, true
}

func (s *Service) work() {
	defer s.wg.Done()
	for {
		id, ok := s.queue.pop()
		if !ok {
			select {
			case <-s.ctx.Done():
				return
			case <-s.queue.signal:
			}
			continue
		}
		if s.ctx.Err() != nil {
			return
		}
		s.runJob(id)
		s.backlog.release(id)
	}
}

func newJobID() string { return "job_" + uuid.Must(uuid.NewV7()).String() }

// update runs fn in a transaction until it commits, fn declines (errSkip)
// or the service closes. It keeps retrying because giving up on a claim or
// a terminal write would leave the job stuck until the next restart, and
// conflicts are expected: the terminal transaction reads the webhook
// endpoint, whose counters the dispatcher updates on every delivery.
func (s *Service) update(fn func(store.Tx) error) error {
	delay := 10 * time.Millisecond
	for i := 1; ; i++ {
		err := s.st.Update(s.ctx, fn)
		if err == nil || errors.Is(err, errSkip) || s.ctx.Err() != nil {
			return err
		}
		if i == 5 || i%50 == 0 {
			s.log.Warn("async jobs: store write keeps failing; retrying", "tries", i, "error", err)
		}
		t := time.NewTimer(delay + time.Duration(rand.Int64N(int64(delay))))
		select {
		case <-s.ctx.Done():
			t.Stop()
			return s.ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
	}
}

// errSkip aborts a transaction that found nothing to do.
var errSkip = errors.New("asyncjobs: nothing to do")

// Routes mounts the async API on app: POST submits, GET polls, per kind.
func (s *Service) Routes(app fiber.Router) {
	for _, k := range Kinds {
		k := k
		app.Post("/v1/async/"+k.Segment, func(c *fiber.Ctx) error { return s.submit(c, k) })
		app.Get("/v1/async/"+k.Segment+"/:job_id", func(c *fiber.Ctx) error { return s.get(c, k) })
	}
}
