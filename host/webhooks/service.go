// Package webhooks owns signed webhook endpoints and their durable,
// at-least-once delivery engine (spec: Webhook endpoint, Events, Limits).
//
// Endpoints are managed through /api/webhooks and the config file's
// `webhooks` array. Deliveries are written to the store before anything is
// sent (Enqueue, or EnqueueTx inside the caller's own transaction), then a
// dispatcher sends them with Standard Webhooks signatures, retries failures
// with exponential backoff and resumes unfinished deliveries after a restart.
package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// Store namespaces owned by this package.
const (
	nsEndpoints  = "webhooks_endpoints"      // endpoint id -> record
	nsNames      = "webhooks_endpoint_names" // name -> endpoint id (uniqueness)
	nsDeliveries = "webhooks_deliveries"     // delivery id -> Delivery (ids sort by creation)
	nsByEndpoint = "webhooks_by_endpoint"    // endpoint id/delivery id -> "" (history listing)
	nsDue        = "webhooks_due"            // dueKey(next attempt, id) -> "" (dispatcher queue)
)

// Options configures a Service.
type Options struct {
	// Store holds endpoints and deliveries; it is sealed at rest by the server
	// when an encryption key is set, which covers secrets and header values.
	Store store.Store
	// Log receives delivery and housekeeping messages.
	Log *slog.Logger
	// Secrets resolves env./vault. references in secrets and header values.
	Secrets *secret.Resolver
	// ConfigEntries is the raw JSON of the config file's `webhooks` array.
	ConfigEntries json.RawMessage
	// RetentionDays prunes finished delivery history older than this many
	// days; 0 keeps it forever.
	RetentionDays int
	// PruneInterval is how often history is pruned (default one hour).
	PruneInterval time.Duration
}

// Service is the webhooks capability: endpoint management, the delivery
// queue and its dispatcher.
type Service struct {
	st      store.Store
	log     *slog.Logger
	secrets *secret.Resolver
	now     func() time.Time

	retention     time.Duration
	pruneInterval time.Duration

	// Two clients so the SSRF guard is a property of the transport, fixed at
	// dial time, rather than something a request could opt out of.
	guarded *http.Client
	open    *http.Client

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]bool // delivery ids being attempted
	active   map[string]int  // endpoint id -> attempts in flight
	started  bool
}

// New opens the capability: it reconciles config-file endpoints into the
// store and starts the dispatcher and the history pruner. Close stops them.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.Store == nil {
		return nil, errors.New("webhooks: a store is required")
	}
	s := &Service{
		st: o.Store, log: o.Log, secrets: o.Secrets, now: time.Now,
		retention:     time.Duration(o.RetentionDays) * 24 * time.Hour,
		pruneInterval: o.PruneInterval,
		guarded:       newClient(true),
		open:          newClient(false),
		wake:          make(chan struct{}, 1),
		inflight:      map[string]bool{},
		active:        map[string]int{},
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.secrets == nil {
		s.secrets = &secret.Resolver{}
	}
	if s.pruneInterval <= 0 {
		s.pruneInterval = time.Hour
	}
	if err := s.syncConfig(ctx, o.ConfigEntries); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.started = true
	s.wg.Add(2)
	go s.dispatch()
	go s.pruneLoop()
	return s, nil
}

// Close stops the dispatcher and waits for attempts in flight to end. An
// attempt cut short by Close is not recorded: its delivery stays queued and
// is sent again, with the same webhook-id, after the next start.
func (s *Service) Close() error {
	s.mu.Lock()
	started := s.started
	s.started = false
	s.mu.Unlock()
	if !started {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	closeIdle(s.guarded)
	closeIdle(s.open)
	return nil
}

// Wake tells the dispatcher that a delivery was queued. EnqueueTx callers
// call it after their transaction commits; the dispatcher also polls, so a
// missed Wake only delays a delivery by a few seconds.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func newEndpointID() string { return uuid.Must(uuid.NewV7()).String() }

// newDeliveryID returns a webhook-id. UUIDv7 ids sort by creation time, which
// the history listing and retention pruning rely on.
func newDeliveryID() string { return "msg_" + uuid.Must(uuid.NewV7()).String() }

// getEndpoint loads an endpoint by id, falling back to its name.
func getEndpoint(tx store.Tx, ref string) (record, error) {
	r, err := store.GetJSON[record](tx, nsEndpoints, ref)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	id, nerr := tx.Get(nsNames, ref)
	if nerr != nil {
		return r, fmt.Errorf("webhook endpoint %q: %w", ref, err)
	}
	return store.GetJSON[record](tx, nsEndpoints, string(id))
}

// putEndpoint writes r and keeps the name index in step; it reports a
// conflict when another endpoint already has the name.
func putEndpoint(tx store.Tx, r *record, oldName string) error {
	if id, err := tx.Get(nsNames, r.Name); err == nil && string(id) != r.ID {
		return errNameTaken
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if oldName != "" && oldName != r.Name {
		if err := tx.Delete(nsNames, oldName); err != nil {
			return err
		}
	}
	if err := tx.Put(nsNames, r.Name, []byte(r.ID)); err != nil {
		return err
	}
	return store.PutJSON(tx, nsEndpoints, r.ID, r)
}

var errNameTaken = errors.New("webhooks: endpoint name already in use")

// update runs fn in a store transaction, retrying a few more times than the
// store does on conflicts: concurrent deliveries to one endpoint all update
// its failure counters.
func (s *Service) update(ctx context.Context, fn func(store.Tx) error) error {
	var err error
	for i := 0; i < 5; i++ {
		err = s.st.Update(ctx, fn)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		time.Sleep(time.Duration(i+1) * 10 * time.Millisecond)
	}
	return err
}
