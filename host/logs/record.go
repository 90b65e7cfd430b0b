// Package logs is the request-log store for inference: every request the
// gateway serves is handed to a Logger off the hot path, written in batches
// to its own store instance (data_dir/logs), and read back through
// GET /api/logs, GET /api/logs/:id and GET /api/logs/stats.
//
// Key layout: records live in namespace "logs" under
// <16 hex digits of the timestamp in Unix nanoseconds><id>, so a key scan is
// a scan in time order (reverse = newest first) and a time window is a key
// range. Ids are UUIDv7 carrying the record's millisecond, so GET
// /api/logs/:id reads the keys of that millisecond; a second namespace maps
// id -> key only for ids that do not (ones a client chose, or written by an
// older gateway), which halves the keys the store writes and compacts.
// No other secondary indexes exist: filters on provider, model, status, keys
// and text decode the records of the time window, a cost each query bounds
// with a scan cap (see Query).
package logs

import (
	"encoding/hex"
	"strconv"
	"time"

	"github.com/wasmgate/gateway/host/reqid"
)

// Status values of a Record.
const (
	StatusSuccess = "success"
	StatusError   = "error"
)

// Record is one inference request as the log store keeps it. The inference
// pipeline fills it after the response and hands it to Logger.Record; fields
// left empty are derived where possible (ID, Timestamp, Status, TotalTokens).
type Record struct {
	// ID is time-sortable (UUIDv7 from Timestamp) when left empty.
	ID string `json:"id"`
	// Timestamp is when the request arrived; stored as RFC 3339 UTC.
	Timestamp time.Time `json:"timestamp"`
	// Object is the request type: chat.completion, text.completion,
	// embedding, responses, image.generation, ...
	Object string `json:"object"`
	// Route is the ingress path (/v1/chat/completions, /anthropic/v1/messages).
	Route string `json:"route,omitempty"`
	// Provider is the provider that served (or last failed) the request.
	Provider string `json:"provider"`
	// Model is the model the client asked for; ResolvedModel the upstream
	// model after aliases and routing.
	Model         string `json:"model"`
	ResolvedModel string `json:"resolved_model,omitempty"`
	// Status is "success" or "error" (derived from Error/StatusCode when empty).
	Status     string `json:"status"`
	StatusCode int    `json:"status_code"`
	// LatencyMS is the total request time; TTFTMS the time to the first
	// token of a stream.
	LatencyMS float64 `json:"latency_ms"`
	TTFTMS    float64 `json:"ttft_ms,omitempty"`
	Stream    bool    `json:"stream"`

	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	CachedReadTokens int64 `json:"cached_read_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
	// Cost is in USD.
	Cost float64 `json:"cost"`

	// KeyID is the provider key used; VirtualKeyID the caller's virtual key.
	KeyID        string `json:"key_id,omitempty"`
	VirtualKeyID string `json:"virtual_key_id,omitempty"`

	IsFallback    bool `json:"is_fallback"`
	FallbackIndex int  `json:"fallback_index"`
	Retries       int  `json:"retries"`

	Error *ErrorInfo `json:"error,omitempty"`

	// Input and Output are the request and response bodies, kept only when
	// logs.capture_content is on and cut at logs.max_content_bytes. The
	// pipeline must never put headers or credentials here.
	Input            string `json:"input,omitempty"`
	Output           string `json:"output,omitempty"`
	ContentTruncated bool   `json:"content_truncated,omitempty"`

	AsyncJobID string            `json:"async_job_id,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// ErrorInfo is the error a failed request ended with.
type ErrorInfo struct {
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// derivedID reports whether a record's id carries the millisecond of its
// key's timestamp, so the record can be found from the id alone (see
// Logger.Get) and needs no entry in the id namespace. Every id the gateway
// makes is such an id; only ids chosen elsewhere need the index.
func derivedID(id string, tsNanos int64) bool {
	ms, ok := reqid.Millis(id)
	return ok && tsNanos >= 0 && ms == tsNanos/int64(time.Millisecond)
}

// normalize fills derived fields; it runs on the writer goroutine.
func (r *Record) normalize() {
	r.Timestamp = r.Timestamp.UTC()
	if r.ID == "" {
		r.ID = reqid.New(r.Timestamp)
	}
	if r.Status == "" {
		if r.Error != nil || r.StatusCode >= 400 {
			r.Status = StatusError
		} else {
			r.Status = StatusSuccess
		}
	}
	if r.TotalTokens == 0 {
		r.TotalTokens = r.PromptTokens + r.CompletionTokens
	}
}

// Namespaces of the logs store.
const (
	nsLogs = "logs"
	nsByID = "logs_id"
)

// tsWidth is the width of the hex timestamp that starts every key.
const tsWidth = 16

// recordKey is the primary key: fixed-width hex of the Unix nanoseconds
// (lexical order = time order for every time after 1970) followed by the id,
// which breaks ties between records of the same nanosecond.
func recordKey(t time.Time, id string) string {
	return tsKey(t.UnixNano()) + id
}

func tsKey(ns int64) string {
	if ns < 0 {
		ns = 0
	}
	var b [8]byte
	u := uint64(ns)
	for i := 7; i >= 0; i-- {
		b[i] = byte(u)
		u >>= 8
	}
	return hex.EncodeToString(b[:])
}

// keyTime reads the timestamp back from a key without decoding the value.
func keyTime(key string) (int64, bool) {
	if len(key) < tsWidth {
		return 0, false
	}
	u, err := strconv.ParseUint(key[:tsWidth], 16, 64)
	if err != nil {
		return 0, false
	}
	return int64(u), true
}

// keyID is the id part of a primary key.
func keyID(key string) string {
	if len(key) < tsWidth {
		return ""
	}
	return key[tsWidth:]
}
