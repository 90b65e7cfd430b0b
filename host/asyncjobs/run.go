package asyncjobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/store"
)

// ctxKey carries a job's context on the in-process fasthttp request.
type ctxKey struct{}

// ContextMiddleware hands the context of an in-process async run to the
// request's UserContext, which the inference pipeline uses for upstream
// calls: shutting down or timing out a job then cancels its upstream
// request. It must run before the inference routes; ordinary requests
// carry no such value and pass through untouched.
func ContextMiddleware(c *fiber.Ctx) error {
	if ctx, ok := c.Context().UserValue(ctxKey{}).(context.Context); ok {
		c.SetUserContext(ctx)
	}
	return c.Next()
}

// runJob claims a job, runs it and records its outcome.
func (s *Service) runJob(id string) {
	job, err := s.claim(id)
	if errors.Is(err, errSkip) {
		return
	}
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Error("async job: claim failed; it runs again after a restart", "job_id", id, "error", err)
		}
		return
	}
	if job.terminal() {
		// claim failed it (too many interrupted runs); nothing to run.
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.o.JobTimeout)
	status, body := s.execute(ctx, job)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	if s.ctx.Err() != nil {
		// Shutting down: the outcome is an artefact of the cancellation.
		// The job stays running in the store and reruns after the restart.
		return
	}
	if timedOut {
		e := apierr.New(http.StatusGatewayTimeout, apierr.TypeUpstream, "async_job_timeout",
			fmt.Sprintf("the job did not finish within %s (async.job_timeout)", s.o.JobTimeout))
		status, body = e.StatusCode, mustJSON(e)
	}
	if err := s.finish(id, job.Attempts, status, body); err != nil && !errors.Is(err, errSkip) && s.ctx.Err() == nil {
		s.log.Error("async job: recording the outcome failed; it runs again after a restart", "job_id", id, "error", err)
	}
}

// claim moves a queued (or interrupted running) job to running and counts
// the run. A job whose runs are used up is failed here instead.
func (s *Service) claim(id string) (*Job, error) {
	var job Job
	var delivered bool
	err := s.update(func(tx store.Tx) error {
		delivered = false
		var err error
		job, err = store.GetJSON[Job](tx, nsJobs, id)
		if errors.Is(err, store.ErrNotFound) {
			_ = tx.Delete(nsPending, id)
			return nil
		}
		if err != nil {
			return err
		}
		if job.Status != StateQueued && job.Status != StateRunning {
			return errSkip
		}
		if job.Attempts >= s.o.MaxAttempts {
			e := apierr.New(http.StatusServiceUnavailable, apierr.TypeUnavailable, "async_job_interrupted",
				fmt.Sprintf("the gateway stopped while this job ran %d times (async.max_attempts); it is not run again", job.Attempts))
			delivered, err = s.finishTx(tx, &job, e.StatusCode, mustJSON(e))
			return err
		}
		now := s.now().UTC()
		job.Status, job.StartedAt = StateRunning, &now
		job.Attempts++
		return store.PutJSON(tx, nsJobs, id, job)
	})
	if err != nil {
		return nil, err
	}
	if job.ID == "" {
		return nil, errSkip
	}
	if delivered {
		s.wh.Wake()
	}
	return &job, nil
}

// execute sends the job's request through the gateway's own handler and
// returns the answer the sync route gave.
func (s *Service) execute(ctx context.Context, job *Job) (int, []byte) {
	k, ok := kindBySegment(job.Segment)
	if !ok {
		e := apierr.Internal(fmt.Errorf("unknown async kind %q", job.Segment))
		return e.StatusCode, mustJSON(e)
	}
	var req fasthttp.Request
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(k.SyncPath)
	for name, v := range job.Headers {
		req.Header.Set(name, v)
	}
	req.Header.SetContentType("application/json")
	req.SetBody(job.Body)
	var addr net.Addr
	if ip := net.ParseIP(job.ClientIP); ip != nil {
		addr = &net.TCPAddr{IP: ip}
	}
	fctx := &fasthttp.RequestCtx{}
	fctx.Init(&req, addr, nil)
	fctx.SetUserValue(ctxKey{}, ctx)
	s.handler(fctx)
	status := fctx.Response.StatusCode()
	body := append([]byte(nil), fctx.Response.Body()...)
	if !json.Valid(body) {
		// Every route answers JSON; keep the record valid JSON regardless.
		body = mustJSON(string(body))
	}
	return status, body
}

// finish records a job's outcome and, in the same transaction, queues its
// webhook delivery, then wakes the dispatcher.
func (s *Service) finish(id string, attempt, status int, body []byte) error {
	var delivered bool
	err := s.update(func(tx store.Tx) error {
		job, err := store.GetJSON[Job](tx, nsJobs, id)
		if err != nil {
			return err
		}
		if job.Status != StateRunning || job.Attempts != attempt {
			return errSkip // finished or re-claimed meanwhile
		}
		delivered, err = s.finishTx(tx, &job, status, body)
		return err
	})
	if err == nil && delivered {
		s.wh.Wake()
	}
	return err
}

// finishTx writes the terminal state of job inside tx and queues the
// webhook delivery it triggers. An endpoint that is gone, disabled or no
// longer subscribed by now means no delivery (spec, Events rule 1); the
// reason is kept on the job. It reports whether a delivery was queued.
func (s *Service) finishTx(tx store.Tx, job *Job, status int, body []byte) (bool, error) {
	now := s.now().UTC()
	exp := now.Add(s.o.ResultTTL)
	job.CompletedAt, job.ResultExpiresAt, job.StatusCode = &now, &exp, status
	job.Result, job.Error = nil, nil
	if status >= 200 && status < 300 {
		job.Status, job.Result = StateCompleted, body
	} else {
		job.Status, job.Error = StateFailed, body
	}
	// The request is no longer needed; dropping it keeps records small and
	// credentials out of the store once they have served their purpose.
	job.Body, job.Headers = nil, nil
	job.WebhookDeliveryID, job.WebhookSkipped = "", ""
	delivered := false
	if job.Webhook != "" && s.wh != nil {
		did, err := s.wh.EnqueueJobTx(tx, job.Webhook, webhooks.JobFacts{
			JobID: job.ID, RequestType: job.RequestType, Status: job.Status, StatusCode: status,
			ResultURL: job.ResultURL(), ResultExpiresAt: exp, Response: job.Result, Error: job.Error,
			CompletedAt: now,
		})
		switch {
		case err == nil:
			job.WebhookDeliveryID, delivered = did, true
		case errors.Is(err, webhooks.ErrEndpointNotFound), errors.Is(err, webhooks.ErrEndpointDisabled),
			errors.Is(err, webhooks.ErrNotSubscribed):
			job.WebhookSkipped = err.Error()
		default:
			return false, fmt.Errorf("queue webhook delivery: %w", err)
		}
	}
	if err := store.PutJSON(tx, nsJobs, job.ID, job); err != nil {
		return false, err
	}
	if err := tx.Delete(nsPending, job.ID); err != nil {
		return false, err
	}
	return delivered, tx.Put(nsExpiry, expiryKey(exp.Add(s.o.PruneGrace), job.ID), []byte(phaseResult))
}

// expiryKey orders the pruner queue by due time; fixed-width nanoseconds
// keep lexical order equal to time order.
func expiryKey(due time.Time, id string) string {
	return fmt.Sprintf("%020d/%s", due.UnixNano(), id)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
