package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/wasmgate/gateway/store"
)

// UserAgent identifies the gateway to receivers.
const UserAgent = "wasmgate-webhooks/1"

const (
	// idlePoll bounds how long the dispatcher sleeps without a wake-up, so a
	// delivery queued by an EnqueueTx caller that forgot Wake still goes out.
	idlePoll = 5 * time.Second
	// scanLimit bounds one pass over the due queue.
	scanLimit = 1000
	// pruneBatch bounds one retention transaction.
	pruneBatch = 500
)

// candidate is a due delivery the dispatcher may start.
type candidate struct {
	id, endpointID string
	limit          int
}

// dispatch is the scheduler: it starts due deliveries, respecting each
// endpoint's max_concurrent_deliveries, and sleeps until the next one is
// due, a delivery is queued, or an attempt frees a slot. Deliveries left
// pending or delivering by a previous process are in the due queue, so they
// are resumed by the first pass after a start.
func (s *Service) dispatch() {
	defer s.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		next, err := s.startDue()
		if err != nil && s.ctx.Err() == nil {
			s.log.Warn("webhooks: scan due deliveries", "error", err)
		}
		wait := idlePoll
		if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		timer.Reset(wait)
	}
}

// startDue launches every due delivery that has a free slot and returns
// when the earliest future delivery is due (zero when none is queued).
func (s *Service) startDue() (time.Time, error) {
	now := s.now()
	var next time.Time
	var due []candidate
	limits := map[string]int{}
	scanned := 0
	err := s.st.View(s.ctx, func(tx store.Tx) error {
		return tx.Scan(nsDue, store.ScanOptions{}, func(key string, v []byte) error {
			at, id, ok := parseDueKey(key)
			if !ok {
				return nil
			}
			if at.After(now) {
				next = at
				return store.ErrStopScan
			}
			if scanned++; scanned > scanLimit {
				// More is due than one pass takes; come back soon.
				next = now.Add(100 * time.Millisecond)
				return store.ErrStopScan
			}
			endpointID := string(v)
			limit, ok := limits[endpointID]
			if !ok {
				// A missing endpoint still gets one slot: the attempt
				// finishes its deliveries as failed.
				limit = 1
				if r, err := store.GetJSON[record](tx, nsEndpoints, endpointID); err == nil {
					limit = r.MaxConcurrentDeliveries
				}
				limits[endpointID] = limit
			}
			due = append(due, candidate{id: id, endpointID: endpointID, limit: limit})
			return nil
		})
	})
	if err != nil {
		return next, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		return next, nil
	}
	for _, c := range due {
		if s.inflight[c.id] || s.active[c.endpointID] >= c.limit {
			continue
		}
		s.inflight[c.id] = true
		s.active[c.endpointID]++
		s.wg.Add(1)
		go s.attempt(c)
	}
	return next, nil
}

// release frees the slot of an attempt and lets the scheduler look again.
func (s *Service) release(c candidate) {
	s.mu.Lock()
	delete(s.inflight, c.id)
	if s.active[c.endpointID]--; s.active[c.endpointID] <= 0 {
		delete(s.active, c.endpointID)
	}
	s.mu.Unlock()
	s.Wake()
}

// sendPlan is what one attempt needs, read in the transaction that marks
// the delivery as delivering.
type sendPlan struct {
	d  Delivery
	ep record
}

// attempt runs one delivery attempt end to end: claim, send, record.
func (s *Service) attempt(c candidate) {
	defer s.wg.Done()
	defer s.release(c)
	plan, ok, err := s.claim(c.id)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("webhooks: claim delivery", "delivery_id", c.id, "error", err)
		}
		return
	}
	if !ok {
		return
	}
	started := s.now()
	status, snippet, sendErr := s.send(plan)
	a := Attempt{StartedAt: started.UTC(), DurationMS: time.Since(started).Milliseconds(),
		StatusCode: status, ResponseSnippet: snippet}
	if sendErr != nil {
		a.Error = sendErr.Error()
	}
	if s.ctx.Err() != nil {
		// Shutting down: the attempt was cut by Close, not by the receiver.
		// Leave the delivery queued so the next start sends it again.
		return
	}
	if err := s.record(c.id, a, sendErr == nil); err != nil && s.ctx.Err() == nil {
		s.log.Warn("webhooks: record attempt", "delivery_id", c.id, "error", err)
	}
}

// claim marks a due delivery as delivering and returns what to send. A
// delivery whose endpoint is gone, disabled or no longer subscribed is
// finished here without a request (ok false).
func (s *Service) claim(id string) (sendPlan, bool, error) {
	var plan sendPlan
	send := false
	err := s.update(s.ctx, func(tx store.Tx) error {
		send = false
		d, err := store.GetJSON[Delivery](tx, nsDeliveries, id)
		if errors.Is(err, store.ErrNotFound) {
			return s.dropDangling(tx, id)
		}
		if err != nil {
			return err
		}
		if d.terminal() || d.NextAttemptAt == nil {
			return s.dropDangling(tx, id)
		}
		ep, err := store.GetJSON[record](tx, nsEndpoints, d.EndpointID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return s.finish(tx, &d, StateFailed, "endpoint was deleted")
		case err != nil:
			return err
		case ep.Disabled:
			return s.finish(tx, &d, StateSkipped, "endpoint is disabled")
		case !d.Test && !ep.Subscribed(d.Event):
			return s.finish(tx, &d, StateSkipped, "endpoint is no longer subscribed to "+d.Event)
		}
		d.State, d.UpdatedAt = StateDelivering, s.now().UTC()
		if err := store.PutJSON(tx, nsDeliveries, d.ID, d); err != nil {
			return err
		}
		plan, send = sendPlan{d: d, ep: ep}, true
		return nil
	})
	return plan, send && err == nil, err
}

// dropDangling removes queue entries of a delivery that is gone or finished.
func (s *Service) dropDangling(tx store.Tx, id string) error {
	var keys []string
	err := tx.Scan(nsDue, store.ScanOptions{}, func(key string, _ []byte) error {
		if _, kid, ok := parseDueKey(key); ok && kid == id {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(nsDue, k); err != nil {
			return err
		}
	}
	return nil
}

// finish moves d to a terminal state and takes it off the queue.
func (s *Service) finish(tx store.Tx, d *Delivery, state, reason string) error {
	if d.NextAttemptAt != nil {
		if err := tx.Delete(nsDue, dueKey(*d.NextAttemptAt, d.ID)); err != nil {
			return err
		}
	}
	d.State, d.Reason, d.NextAttemptAt, d.UpdatedAt = state, reason, nil, s.now().UTC()
	return store.PutJSON(tx, nsDeliveries, d.ID, d)
}

// send performs the HTTP request of one attempt. It returns the status
// code, a capped response snippet and an error for any outcome that is not
// a 2xx answer.
func (s *Service) send(p sendPlan) (int, string, error) {
	timeout := time.Duration(p.ep.AttemptTimeoutSeconds) * time.Second
	// One deadline for the whole attempt: connect, TLS, headers and body.
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()

	sec, err := s.secrets.Resolve(ctx, p.ep.Secret)
	if err != nil {
		return 0, "", fmt.Errorf("signing secret: %w", err)
	}
	signer, err := NewSigner(sec)
	if err != nil {
		return 0, "", fmt.Errorf("signing secret: %w", err)
	}
	body := []byte(p.d.Payload)
	if p.d.ResultExpiresAt != nil && !s.now().Before(*p.d.ResultExpiresAt) {
		body = markResultExpired(body)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.ep.URL, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("build request: %w", err)
	}
	// Custom headers first so the delivery headers below always win.
	for name, v := range p.ep.Headers {
		val, err := s.secrets.Resolve(ctx, v)
		if err != nil {
			return 0, "", fmt.Errorf("header %s: %w", name, err)
		}
		req.Header.Set(name, val)
	}
	ts := s.now()
	req.Header.Set("webhook-id", p.d.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", signer.Sign(p.d.ID, ts, body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)

	client := s.guarded
	if p.ep.AllowPrivateNetwork {
		client = s.open
	}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return 0, "", fmt.Errorf("attempt timed out after %s", timeout)
		}
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, rerr := io.ReadAll(io.LimitReader(resp.Body, responseReadBytes))
	snippet := string(raw[:min(len(raw), responseSnippetBytes)])
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return resp.StatusCode, snippet, fmt.Errorf("receiver answered %d (redirects are not followed)", resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return resp.StatusCode, snippet, fmt.Errorf("receiver answered %d", resp.StatusCode)
	case rerr != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The status line came in time but the body did not: the attempt
		// as a whole exceeded its bound.
		return resp.StatusCode, snippet, fmt.Errorf("attempt timed out after %s reading the response", timeout)
	}
	return resp.StatusCode, snippet, nil
}

// record stores the outcome of an attempt, schedules a retry or finishes
// the delivery, and updates the endpoint's success and failure stats.
func (s *Service) record(id string, a Attempt, ok bool) error {
	return s.update(s.ctx, func(tx store.Tx) error {
		d, err := store.GetJSON[Delivery](tx, nsDeliveries, id)
		if errors.Is(err, store.ErrNotFound) {
			return s.dropDangling(tx, id)
		}
		if err != nil {
			return err
		}
		a.Number = 1
		if n := len(d.Attempts); n > 0 {
			a.Number = d.Attempts[n-1].Number + 1
		}
		d.Attempts = append(d.Attempts, a)
		if len(d.Attempts) > maxAttemptsKept {
			d.Attempts = d.Attempts[len(d.Attempts)-maxAttemptsKept:]
		}
		d.RoundAttempts++
		ep, epErr := store.GetJSON[record](tx, nsEndpoints, d.EndpointID)
		if epErr != nil && !errors.Is(epErr, store.ErrNotFound) {
			return epErr
		}
		haveEP := epErr == nil
		now := s.now().UTC()
		if haveEP {
			if ok {
				ep.ConsecutiveFailures, ep.LastSuccessAt = 0, &now
			} else {
				ep.ConsecutiveFailures++
				ep.LastFailureAt = &now
			}
			if err := store.PutJSON(tx, nsEndpoints, ep.ID, ep); err != nil {
				return err
			}
		}
		switch {
		case ok:
			return s.finish(tx, &d, StateDelivered, "")
		case !haveEP:
			return s.finish(tx, &d, StateFailed, "endpoint was deleted")
		case d.RoundAttempts > ep.MaxRetries:
			return s.finish(tx, &d, StateFailed, fmt.Sprintf("gave up after %d attempts: %s", d.RoundAttempts, a.Error))
		}
		if d.NextAttemptAt != nil {
			if err := tx.Delete(nsDue, dueKey(*d.NextAttemptAt, d.ID)); err != nil {
				return err
			}
		}
		next := now.Add(ep.backoff(d.RoundAttempts))
		d.State, d.Reason, d.NextAttemptAt, d.UpdatedAt = StatePending, a.Error, &next, now
		if err := store.PutJSON(tx, nsDeliveries, d.ID, d); err != nil {
			return err
		}
		return queue(tx, next, &d)
	})
}

// pruneLoop drops finished delivery history past the retention window.
func (s *Service) pruneLoop() {
	defer s.wg.Done()
	if s.retention <= 0 {
		return
	}
	t := time.NewTicker(s.pruneInterval)
	defer t.Stop()
	for {
		if _, err := s.Prune(s.ctx); err != nil && s.ctx.Err() == nil {
			s.log.Warn("webhooks: prune delivery history", "error", err)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Prune deletes delivered, failed and skipped deliveries created before the
// retention window, in bounded transactions, and returns how many it
// deleted. Queued deliveries are never pruned.
func (s *Service) Prune(ctx context.Context) (int, error) {
	if s.retention <= 0 {
		return 0, nil
	}
	cutoff := s.now().Add(-s.retention)
	total, after := 0, ""
	for {
		type victim struct{ id, endpointID string }
		var victims []victim
		done := false
		err := s.st.View(ctx, func(tx store.Tx) error {
			victims, done = victims[:0], true
			return tx.Scan(nsDeliveries, store.ScanOptions{After: after}, func(key string, v []byte) error {
				var d struct {
					EndpointID string    `json:"endpoint_id"`
					State      string    `json:"state"`
					CreatedAt  time.Time `json:"created_at"`
				}
				if err := json.Unmarshal(v, &d); err != nil {
					return fmt.Errorf("decode delivery %s: %w", key, err)
				}
				// Ids sort by creation, so the first young record ends the pass.
				if !d.CreatedAt.Before(cutoff) {
					return store.ErrStopScan
				}
				after = key
				switch d.State {
				case StateDelivered, StateFailed, StateSkipped:
					victims = append(victims, victim{key, d.EndpointID})
				}
				if len(victims) >= pruneBatch {
					done = false
					return store.ErrStopScan
				}
				return nil
			})
		})
		if err != nil {
			return total, err
		}
		if len(victims) > 0 {
			err = s.update(ctx, func(tx store.Tx) error {
				for _, v := range victims {
					// Re-checked here: a redelivery may have queued it since the scan.
					d, err := store.GetJSON[Delivery](tx, nsDeliveries, v.id)
					if errors.Is(err, store.ErrNotFound) || (err == nil && !d.terminal()) {
						continue
					}
					if err != nil {
						return err
					}
					if err := tx.Delete(nsDeliveries, v.id); err != nil {
						return err
					}
					if err := tx.Delete(nsByEndpoint, v.endpointID+"/"+v.id); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return total, err
			}
			total += len(victims)
		}
		if done {
			return total, nil
		}
	}
}
