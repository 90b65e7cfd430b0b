package webhooks

import (
	"encoding/json"
	"fmt"
	"time"
)

// JobFacts describes a terminal async job, as the async-jobs capability
// knows it, for building the delivery body.
type JobFacts struct {
	// JobID is the async job id.
	JobID string
	// RequestType is the inference type, e.g. "chat_completion".
	RequestType string
	// Status is "completed" or "failed"; it selects the event.
	Status string
	// StatusCode is the HTTP status of the job outcome.
	StatusCode int
	// ResultURL is the relative path that fetches the result through the gateway.
	ResultURL string
	// ResultExpiresAt is when the stored result is dropped.
	ResultExpiresAt time.Time
	// Response is the job's response body (completed jobs), JSON.
	Response json.RawMessage
	// Error is the job's error body (failed jobs), JSON.
	Error json.RawMessage
	// CompletedAt is the event time (created_at of the body); zero means now.
	CompletedAt time.Time
}

// Event returns the event a job in this status emits, or an error for a
// non-terminal status.
func (f JobFacts) Event() (string, error) {
	switch f.Status {
	case "completed":
		return EventJobCompleted, nil
	case "failed":
		return EventJobFailed, nil
	}
	return "", fmt.Errorf("webhooks: job status %q is not terminal (want completed or failed)", f.Status)
}

// EventBody is the JSON body of a delivery (spec, Events).
type EventBody struct {
	Event     string    `json:"event"`
	CreatedAt time.Time `json:"created_at"`
	Data      EventData `json:"data"`
}

// EventData is the data object of a delivery body.
type EventData struct {
	JobID           string          `json:"job_id"`
	RequestType     string          `json:"request_type"`
	Status          string          `json:"status"`
	StatusCode      int             `json:"status_code"`
	ResultURL       string          `json:"result_url"`
	ResultExpiresAt time.Time       `json:"result_expires_at"`
	Response        json.RawMessage `json:"response,omitempty"`
	ResponseOmitted bool            `json:"response_omitted,omitempty"`
	Error           json.RawMessage `json:"error,omitempty"`
	ErrorOmitted    bool            `json:"error_omitted,omitempty"`
	ResultExpired   bool            `json:"result_expired,omitempty"`
}

// BuildEventBody builds the delivery body for a terminal job. The response
// (completed) or error (failed) is inlined only when includeResponse is set
// and it fits maxKBs kibibytes; a body too large to inline is left out and
// flagged with response_omitted / error_omitted, so the receiver knows to
// fetch result_url. Without includeResponse neither is inlined nor flagged.
func BuildEventBody(f JobFacts, includeResponse bool, maxKBs int) ([]byte, error) {
	ev, err := f.Event()
	if err != nil {
		return nil, err
	}
	at := f.CompletedAt
	if at.IsZero() {
		at = time.Now()
	}
	d := EventData{
		JobID: f.JobID, RequestType: f.RequestType, Status: f.Status, StatusCode: f.StatusCode,
		ResultURL: f.ResultURL, ResultExpiresAt: f.ResultExpiresAt.UTC(),
	}
	limit := maxKBs * 1024
	if includeResponse {
		if ev == EventJobCompleted && len(f.Response) > 0 {
			if len(f.Response) <= limit && json.Valid(f.Response) {
				d.Response = f.Response
			} else {
				d.ResponseOmitted = true
			}
		}
		if ev == EventJobFailed && len(f.Error) > 0 {
			if len(f.Error) <= limit && json.Valid(f.Error) {
				d.Error = f.Error
			} else {
				d.ErrorOmitted = true
			}
		}
	}
	body, err := json.Marshal(EventBody{Event: ev, CreatedAt: at.UTC(), Data: d})
	if err != nil {
		return nil, fmt.Errorf("webhooks: encode event body: %w", err)
	}
	return body, nil
}

// markResultExpired sets data.result_expired in a stored body. It is done
// at send time because only then is it known whether the result is gone.
func markResultExpired(body []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	var data map[string]json.RawMessage
	if json.Unmarshal(m["data"], &data) != nil {
		return body
	}
	data["result_expired"] = json.RawMessage("true")
	raw, err := json.Marshal(data)
	if err != nil {
		return body
	}
	m["data"] = raw
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
