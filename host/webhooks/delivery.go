package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/wasmgate/gateway/store"
)

// Delivery states.
//
//	pending    queued; next_attempt_at says when the next attempt runs
//	delivering an attempt is in progress (after a crash it is retried)
//	delivered  a receiver answered 2xx (terminal)
//	failed     every attempt failed and retries are exhausted, or the
//	           endpoint was deleted (terminal; reason says which)
//	skipped    not sent because, at send time, the endpoint was disabled or
//	           no longer subscribed to the event (terminal; reason says which)
//
// A terminal delivery goes back to pending only through redeliver.
const (
	StatePending    = "pending"
	StateDelivering = "delivering"
	StateDelivered  = "delivered"
	StateFailed     = "failed"
	StateSkipped    = "skipped"
)

// Caps on what a delivery record keeps, so history stays small.
const (
	responseSnippetBytes = 1024
	responseReadBytes    = 64 << 10
	maxAttemptsKept      = 50
	maxPayloadBytes      = 16 << 20
)

// Attempt is one HTTP try of a delivery.
type Attempt struct {
	Number          int       `json:"number"`
	StartedAt       time.Time `json:"started_at"`
	DurationMS      int64     `json:"duration_ms"`
	StatusCode      int       `json:"status_code,omitempty"`
	Error           string    `json:"error,omitempty"`
	ResponseSnippet string    `json:"response_snippet,omitempty"`
}

// Delivery is one event for one endpoint. Its id is the webhook-id header
// of every attempt, redeliveries included, so receivers can dedupe.
type Delivery struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	Event      string          `json:"event"`
	Test       bool            `json:"test,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	State      string          `json:"state"`
	Reason     string          `json:"reason,omitempty"`
	Attempts   []Attempt       `json:"attempts"`
	// RoundAttempts counts attempts since the delivery was last queued; a
	// redelivery starts a new round with a full retry budget.
	RoundAttempts   int        `json:"round_attempts"`
	NextAttemptAt   *time.Time `json:"next_attempt_at"`
	ResultExpiresAt *time.Time `json:"result_expires_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

func (d *Delivery) terminal() bool {
	return d.State == StateDelivered || d.State == StateFailed || d.State == StateSkipped
}

// Errors EnqueueTx reports when no delivery may be queued (spec, Events rule
// 1): the job then completes without a delivery.
var (
	ErrEndpointNotFound = errors.New("webhooks: endpoint not found")
	ErrEndpointDisabled = errors.New("webhooks: endpoint is disabled")
	ErrNotSubscribed    = errors.New("webhooks: endpoint is not subscribed to the event")
)

// dueKey orders the dispatcher queue by next attempt time. Fixed-width
// nanoseconds keep lexical order equal to time order.
func dueKey(at time.Time, id string) string {
	return fmt.Sprintf("%020d/%s", at.UnixNano(), id)
}

// queue puts d on the dispatcher queue at at. The entry's value is the
// endpoint id, so a scheduler pass can apply per-endpoint concurrency without
// reading (possibly large) delivery records.
func queue(tx store.Tx, at time.Time, d *Delivery) error {
	return tx.Put(nsDue, dueKey(at, d.ID), []byte(d.EndpointID))
}

func parseDueKey(k string) (time.Time, string, bool) {
	ts, id, ok := strings.Cut(k, "/")
	if !ok {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, "", false
	}
	return time.Unix(0, n), id, true
}

// Enqueue durably queues payload for the endpoint named or identified by
// endpointRef and wakes the dispatcher. It returns the delivery id (the
// webhook-id). It fails with ErrEndpointNotFound, ErrEndpointDisabled or
// ErrNotSubscribed when nothing may be sent.
func (s *Service) Enqueue(ctx context.Context, endpointRef, event string, payload []byte) (string, error) {
	var id string
	err := s.update(ctx, func(tx store.Tx) error {
		var err error
		id, err = s.EnqueueTx(tx, endpointRef, event, payload)
		return err
	})
	if err != nil {
		return "", err
	}
	s.Wake()
	return id, nil
}

// EnqueueTx queues payload inside the caller's transaction, so a job's
// terminal state and its delivery commit together or not at all. The
// caller calls Wake after the commit. tx may be re-run on a conflict;
// EnqueueTx is safe to call again then (it makes a new id each run).
func (s *Service) EnqueueTx(tx store.Tx, endpointRef, event string, payload []byte) (string, error) {
	r, err := s.subscribedEndpoint(tx, endpointRef, event)
	if err != nil {
		return "", err
	}
	return s.enqueueRecord(tx, &r.Endpoint, event, payload, nil, false)
}

// EnqueueJobTx builds the event body for a terminal job with the endpoint's
// include_response and max_response_payload_kbs, and queues it inside tx.
// This is the call the async-jobs capability makes when a job that was
// submitted with x-gw-async-webhook reaches completed or failed.
func (s *Service) EnqueueJobTx(tx store.Tx, endpointRef string, job JobFacts) (string, error) {
	event, err := job.Event()
	if err != nil {
		return "", err
	}
	r, err := s.subscribedEndpoint(tx, endpointRef, event)
	if err != nil {
		return "", err
	}
	body, err := BuildEventBody(job, r.IncludeResponse, r.MaxResponsePayloadKBs)
	if err != nil {
		return "", err
	}
	var exp *time.Time
	if !job.ResultExpiresAt.IsZero() {
		t := job.ResultExpiresAt.UTC()
		exp = &t
	}
	return s.enqueueRecord(tx, &r.Endpoint, event, body, exp, false)
}

// EnqueueJob is EnqueueJobTx in its own transaction, followed by Wake.
func (s *Service) EnqueueJob(ctx context.Context, endpointRef string, job JobFacts) (string, error) {
	var id string
	err := s.update(ctx, func(tx store.Tx) error {
		var err error
		id, err = s.EnqueueJobTx(tx, endpointRef, job)
		return err
	})
	if err != nil {
		return "", err
	}
	s.Wake()
	return id, nil
}

// CheckEndpoint reports whether endpointRef names an existing, enabled
// endpoint; async submit uses it to refuse an unusable x-gw-async-webhook.
func (s *Service) CheckEndpoint(ctx context.Context, endpointRef string) error {
	return s.st.View(ctx, func(tx store.Tx) error {
		r, err := getEndpoint(tx, endpointRef)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %q", ErrEndpointNotFound, endpointRef)
		}
		if err != nil {
			return err
		}
		if r.Disabled {
			return fmt.Errorf("%w: %q", ErrEndpointDisabled, endpointRef)
		}
		return nil
	})
}

func (s *Service) subscribedEndpoint(tx store.Tx, ref, event string) (record, error) {
	r, err := getEndpoint(tx, ref)
	if errors.Is(err, store.ErrNotFound) {
		return r, fmt.Errorf("%w: %q", ErrEndpointNotFound, ref)
	}
	if err != nil {
		return r, err
	}
	if r.Disabled {
		return r, fmt.Errorf("%w: %q", ErrEndpointDisabled, r.Name)
	}
	if !r.Subscribed(event) {
		return r, fmt.Errorf("%w: %q does not receive %s", ErrNotSubscribed, r.Name, event)
	}
	return r, nil
}

func (s *Service) enqueueRecord(tx store.Tx, ep *Endpoint, event string, payload []byte, resultExpires *time.Time, test bool) (string, error) {
	if !isKnownEvent(event) {
		return "", fmt.Errorf("webhooks: unknown event %q", event)
	}
	if len(payload) > maxPayloadBytes || !json.Valid(payload) {
		return "", fmt.Errorf("webhooks: payload must be valid JSON of at most %d bytes", maxPayloadBytes)
	}
	now := s.now().UTC()
	d := Delivery{
		ID: newDeliveryID(), EndpointID: ep.ID, Event: event, Test: test,
		Payload: append(json.RawMessage(nil), payload...), State: StatePending, Attempts: []Attempt{},
		NextAttemptAt: &now, ResultExpiresAt: resultExpires, CreatedAt: now, UpdatedAt: now,
	}
	if err := store.PutJSON(tx, nsDeliveries, d.ID, d); err != nil {
		return "", err
	}
	if err := tx.Put(nsByEndpoint, ep.ID+"/"+d.ID, nil); err != nil {
		return "", err
	}
	if err := queue(tx, now, &d); err != nil {
		return "", err
	}
	return d.ID, nil
}

// Redeliver queues a finished delivery again under the same id (webhook-id)
// with a fresh retry budget. A delivery still queued or in progress is left
// alone and reported as a conflict.
func (s *Service) Redeliver(ctx context.Context, id string) (Delivery, error) {
	var d Delivery
	err := s.update(ctx, func(tx store.Tx) error {
		var err error
		d, err = store.GetJSON[Delivery](tx, nsDeliveries, id)
		if err != nil {
			return err
		}
		if !d.terminal() {
			return errStillQueued
		}
		if _, err := store.GetJSON[record](tx, nsEndpoints, d.EndpointID); errors.Is(err, store.ErrNotFound) {
			return errEndpointGone
		} else if err != nil {
			return err
		}
		now := s.now().UTC()
		d.State, d.Reason, d.RoundAttempts, d.NextAttemptAt, d.UpdatedAt = StatePending, "", 0, &now, now
		if err := store.PutJSON(tx, nsDeliveries, d.ID, d); err != nil {
			return err
		}
		return queue(tx, now, &d)
	})
	if err != nil {
		return d, err
	}
	s.Wake()
	return d, nil
}

var (
	errStillQueued  = errors.New("webhooks: delivery is still queued or in progress")
	errEndpointGone = errors.New("webhooks: the delivery's endpoint was deleted")
)

// GetDelivery returns one delivery with its payload and attempts.
func (s *Service) GetDelivery(ctx context.Context, id string) (Delivery, error) {
	var d Delivery
	err := s.st.View(ctx, func(tx store.Tx) error {
		var err error
		d, err = store.GetJSON[Delivery](tx, nsDeliveries, id)
		return err
	})
	return d, err
}
