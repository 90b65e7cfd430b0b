package asyncjobs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/wasmgate/gateway/host/inference"
)

// Job states. A job moves queued -> running -> completed | failed. A job
// found running after a restart was interrupted: it goes back through
// running (attempts counts the runs) until MaxAttempts, then fails with
// async_job_interrupted. completed and failed are terminal.
const (
	StateQueued    = "queued"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
)

// Store namespaces owned by this package (in the main, fsync'd store).
const (
	nsJobs    = "async_jobs"    // job id -> Job
	nsPending = "async_pending" // job id -> "" for queued and running jobs (restart recovery)
	nsExpiry  = "async_expiry"  // expiryKey(due, id) -> phase (pruner queue)
)

// Pruner phases stored as the value of an nsExpiry entry.
const (
	phaseResult    = "result"    // due: drop the result, keep a tombstone
	phaseTombstone = "tombstone" // due: delete the tombstone
)

// Kind is one async inference type: the path segment under /v1/async/, the
// request type and the sync route the job runs through.
type Kind struct {
	// Segment is the path under /v1/async/, e.g. "chat/completions".
	Segment string
	// RequestType is the inference request type, e.g. "chat.completion".
	RequestType string
	// SyncPath is the sync route executed in-process, e.g. "/v1/chat/completions".
	SyncPath string
}

// Kinds lists every async inference type. Batches, files and containers
// are excluded by the spec; the others are served as the unified API grows.
var Kinds = []Kind{
	{Segment: "chat/completions", RequestType: inference.TypeChat, SyncPath: "/v1/chat/completions"},
	{Segment: "completions", RequestType: inference.TypeCompletion, SyncPath: "/v1/completions"},
	{Segment: "responses", RequestType: inference.TypeResponses, SyncPath: "/v1/responses"},
	{Segment: "embeddings", RequestType: inference.TypeEmbedding, SyncPath: "/v1/embeddings"},
}

func kindBySegment(seg string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Segment == seg {
			return k, true
		}
	}
	return Kind{}, false
}

// Job is the stored record of one async job. Body and Headers hold what is
// needed to run (or re-run after a restart) the request; they are dropped
// once the job is terminal. The store is sealed at rest when an encryption
// key is configured, which covers the credential headers kept here.
type Job struct {
	ID          string `json:"id"`
	Segment     string `json:"segment"`
	RequestType string `json:"request_type"`
	Status      string `json:"status"`
	// CredentialHash binds the job to the submitting credential.
	CredentialHash string `json:"credential_hash"`
	// Webhook is the endpoint named by x-gw-async-webhook, if any.
	Webhook string `json:"webhook,omitempty"`
	// WebhookDeliveryID is the webhook-id of the queued delivery.
	WebhookDeliveryID string `json:"webhook_delivery_id,omitempty"`
	// WebhookSkipped says why no delivery was queued at completion time.
	WebhookSkipped string `json:"webhook_skipped,omitempty"`

	Body     json.RawMessage   `json:"body,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	ClientIP string            `json:"client_ip,omitempty"`

	Attempts        int             `json:"attempts"`
	CreatedAt       time.Time       `json:"created_at"`
	StartedAt       *time.Time      `json:"started_at,omitempty"`
	CompletedAt     *time.Time      `json:"completed_at,omitempty"`
	ResultExpiresAt *time.Time      `json:"result_expires_at,omitempty"`
	StatusCode      int             `json:"status_code,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           json.RawMessage `json:"error,omitempty"`
	// Tombstone is set once the pruner dropped the result: the record then
	// only answers 410 until it is deleted.
	Tombstone bool `json:"tombstone,omitempty"`
}

func (j *Job) terminal() bool { return j.Status == StateCompleted || j.Status == StateFailed }

// ResultURL is the path that fetches the job.
func (j *Job) ResultURL() string { return "/v1/async/" + j.Segment + "/" + j.ID }

// View is the public JSON shape of a job (submit and poll answers).
type View struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	RequestType       string          `json:"request_type"`
	Status            string          `json:"status"`
	CreatedAt         time.Time       `json:"created_at"`
	StartedAt         *time.Time      `json:"started_at,omitempty"`
	CompletedAt       *time.Time      `json:"completed_at,omitempty"`
	Attempts          int             `json:"attempts"`
	ResultURL         string          `json:"result_url"`
	ResultExpiresAt   *time.Time      `json:"result_expires_at"`
	StatusCode        int             `json:"status_code,omitempty"`
	Result            json.RawMessage `json:"result,omitempty"`
	Error             json.RawMessage `json:"error,omitempty"`
	Webhook           string          `json:"webhook,omitempty"`
	WebhookDeliveryID string          `json:"webhook_delivery_id,omitempty"`
	WebhookSkipped    string          `json:"webhook_skipped,omitempty"`
}

func (j *Job) view() View {
	return View{
		ID: j.ID, Object: "async_job", RequestType: j.RequestType, Status: j.Status,
		CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, CompletedAt: j.CompletedAt, Attempts: j.Attempts,
		ResultURL: j.ResultURL(), ResultExpiresAt: j.ResultExpiresAt, StatusCode: j.StatusCode,
		Result: j.Result, Error: j.Error, Webhook: j.Webhook,
		WebhookDeliveryID: j.WebhookDeliveryID, WebhookSkipped: j.WebhookSkipped,
	}
}

// Credential headers, in the order they are looked at.
const (
	HeaderVirtualKey = "x-gw-vk"
	HeaderWebhook    = "x-gw-async-webhook"
)

// credentialHash names the caller a job is bound to: the x-gw-vk value,
// else the Authorization bearer token, else x-api-key, else anonymous. Only
// the value is hashed, not the header it came in, so one key presented in
// another accepted header still reads its jobs. Anonymous gets a marker no
// header value can produce (it holds a NUL byte).
func credentialHash(get func(string) string) string {
	cred := "\x00anonymous"
	if v := strings.TrimSpace(get(HeaderVirtualKey)); v != "" {
		cred = v
	} else if tok, ok := bearer(get("Authorization")); ok {
		cred = tok
	} else if v := strings.TrimSpace(get("x-api-key")); v != "" {
		cred = v
	}
	sum := sha256.Sum256([]byte("wasmgate-async-credential-v1\x00" + cred))
	return hex.EncodeToString(sum[:])
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// forwardedHeader reports whether a submit header is replayed on the
// in-process request. Everything is, so governance and plugins see what a
// sync request would carry, except connection-level headers, the body's
// framing (recomputed), the async-only webhook header and the management
// setup token and cookies, which have no meaning on inference.
func forwardedHeader(name string) bool {
	switch strings.ToLower(name) {
	case "host", "content-length", "connection", "transfer-encoding", "keep-alive", "upgrade",
		"te", "trailer", "accept-encoding", "expect", "cookie", "x-gateway-setup-token", HeaderWebhook:
		return false
	}
	return true
}
