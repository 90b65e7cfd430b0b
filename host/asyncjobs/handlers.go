package asyncjobs

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/clientip"
	"github.com/wasmgate/gateway/host/webhooks"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
	"github.com/wasmgate/gateway/store"
)

// Error codes of the async API.
const (
	CodeWebhookNotFound = "webhook_endpoint_not_found"
	CodeWebhookDisabled = "webhook_endpoint_disabled"
	CodeResultExpired   = "result_expired"
	CodeJobNotFound     = "async_job_not_found"
	CodeBacklogFull     = "async_backlog_full"
)

// reserve takes the job's place in the backlog, or answers why there is
// none: 429 with Retry-After, naming the cap that was reached.
func (s *Service) reserve(job Job) *apierr.Error {
	var msg, reason string
	switch s.backlog.reserve(job.ID, job.CredentialHash, s.o.MaxBacklog, s.o.MaxBacklogPerCredential) {
	case admitted:
		return nil
	case gatewayFull:
		reason = "backlog_full"
		msg = fmt.Sprintf("the gateway holds %d unfinished async jobs (async.max_backlog); retry later", s.o.MaxBacklog)
	default:
		reason = "credential_backlog_full"
		msg = fmt.Sprintf("these credentials hold %d unfinished async jobs (async.max_backlog_per_credential); retry when some finish",
			s.o.MaxBacklogPerCredential)
	}
	s.refused.WithLabelValues(reason).Inc()
	e := apierr.New(http.StatusTooManyRequests, apierr.TypeRateLimit, CodeBacklogFull, msg)
	e.Headers = map[string]string{fiber.HeaderRetryAfter: "1"}
	return e
}

// submit accepts a job: it checks what can be checked without running it,
// writes the job durably and answers 202 before any work starts.
func (s *Service) submit(c *fiber.Ctx, k Kind) error {
	body, aerr := prepareBody(c.Body())
	if aerr != nil {
		return aerr
	}
	if s.o.CheckCaller != nil {
		if aerr := s.o.CheckCaller(c); aerr != nil {
			return aerr
		}
	}
	hook := c.Get(HeaderWebhook)
	if hook != "" {
		if s.wh == nil {
			return apierr.BadRequest(CodeWebhookNotFound, HeaderWebhook, "webhooks are not available on this gateway")
		}
		if err := s.wh.CheckEndpoint(c.UserContext(), hook); err != nil {
			switch {
			case errors.Is(err, webhooks.ErrEndpointNotFound):
				return apierr.BadRequest(CodeWebhookNotFound, HeaderWebhook,
					"x-gw-async-webhook names no webhook endpoint: "+quote(hook))
			case errors.Is(err, webhooks.ErrEndpointDisabled):
				return apierr.BadRequest(CodeWebhookDisabled, HeaderWebhook,
					"the webhook endpoint named by x-gw-async-webhook is disabled: "+quote(hook))
			}
			return apierr.Internal(err)
		}
	}
	headers := map[string]string{}
	c.Request().Header.VisitAll(func(key, value []byte) {
		if forwardedHeader(string(key)) {
			headers[string(key)] = string(value)
		}
	})
	job := Job{
		ID: newJobID(), Segment: k.Segment, RequestType: k.RequestType, Status: StateQueued,
		CredentialHash: credentialHash(header(c)), Webhook: hook,
		Body: body, Headers: headers, ClientIP: clientip.Of(c), CreatedAt: s.now().UTC(),
	}
	if e := s.reserve(job); e != nil {
		return e
	}
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if err := store.PutJSON(tx, nsJobs, job.ID, job); err != nil {
			return err
		}
		// The pending entry carries the credential hash, so a restart can
		// count each caller's recovered jobs without reading the jobs.
		return tx.Put(nsPending, job.ID, []byte(job.CredentialHash))
	})
	if err != nil {
		s.backlog.release(job.ID)
		return apierr.Internal(err)
	}
	// Committed (fsync'd): from here on the job survives a crash, so it may
	// be acknowledged. The pending index resumes it if this push is lost.
	s.queue.push(job.ID)
	c.Set(fiber.HeaderLocation, job.ResultURL())
	return c.Status(http.StatusAccepted).JSON(job.view())
}

// prepareBody checks the body is a JSON object naming a model and forces a
// non-streamed answer: a job stores one response, and a stream has no one
// to read it. stream_options is removed with it, since upstreams refuse it
// on non-streamed requests.
func prepareBody(raw []byte) ([]byte, *apierr.Error) {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 {
		return nil, apierr.BadRequest("empty_body", "", "request body is empty; a JSON object is required")
	}
	if body[0] != '{' || !json.Valid(body) {
		return nil, apierr.BadRequest("invalid_json", "", "request body must be a JSON object")
	}
	if _, ok := jsonx.StringField(body, "model"); !ok {
		return nil, apierr.BadRequest("missing_field", "model", `field "model" is required, as "<provider>/<model>"`)
	}
	_, _, hasOpts := jsonx.Field(body, "stream_options")
	if hasOpts {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, apierr.BadRequest("invalid_json", "", "request body must be a JSON object")
		}
		delete(m, "stream_options")
		m["stream"] = json.RawMessage("false")
		out, err := json.Marshal(m)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		return out, nil
	}
	if st, e, ok := jsonx.Field(body, "stream"); ok && string(body[st:e]) != "false" {
		out, _ := jsonx.SetField(body, "stream", []byte("false"))
		return out, nil
	}
	return append([]byte(nil), body...), nil
}

// get answers a poll. A job of another credential, of another type or that
// does not exist are the same 404, so job ids cannot be probed.
func (s *Service) get(c *fiber.Ctx, k Kind) error {
	id := c.Params("job_id")
	var job Job
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		job, err = store.GetJSON[Job](tx, nsJobs, id)
		return err
	})
	notFound := apierr.New(http.StatusNotFound, apierr.TypeNotFound, CodeJobNotFound, "async job "+quote(id)+" not found")
	if errors.Is(err, store.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return apierr.Internal(err)
	}
	cred := credentialHash(header(c))
	if job.Segment != k.Segment || subtle.ConstantTimeCompare([]byte(cred), []byte(job.CredentialHash)) != 1 {
		return notFound
	}
	if job.Tombstone || (job.ResultExpiresAt != nil && !s.now().Before(*job.ResultExpiresAt)) {
		return apierr.New(http.StatusGone, apierr.TypeNotFound, CodeResultExpired,
			"the result of async job "+quote(id)+" expired at "+job.ResultExpiresAt.UTC().Format("2006-01-02T15:04:05Z07:00")+
				" (async.result_ttl)")
	}
	return c.JSON(job.view())
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func header(c *fiber.Ctx) func(string) string {
	return func(k string) string { return c.Get(k) }
}
