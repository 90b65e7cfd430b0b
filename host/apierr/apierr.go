// Package apierr is the gateway's single error envelope. Every endpoint,
// inference and management alike, answers errors in this shape so clients
// can handle them uniformly.
package apierr

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
)

// Error types (the envelope's top-level `type` and `error.type`).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeConflict       = "conflict_error"
	TypeRateLimit      = "rate_limit_error"
	TypeBudget         = "budget_exceeded_error"
	TypeUpstream       = "upstream_error"
	TypePlugin         = "plugin_error"
	TypeInternal       = "internal_error"
	TypeUnavailable    = "service_unavailable"
)

// Detail is the envelope's `error` object.
type Detail struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
	EventID string `json:"event_id"`
}

// Error is the error envelope. It implements error so handlers can return it.
type Error struct {
	EventID        string       `json:"event_id"`
	Type           string       `json:"type"`
	IsGatewayError bool         `json:"is_gateway_error"`
	StatusCode     int          `json:"status_code"`
	Detail         Detail       `json:"error"`
	ExtraFields    *ExtraFields `json:"extra_fields,omitempty"`
	// Headers are sent with the response (Retry-After, WWW-Authenticate).
	Headers map[string]string `json:"-"`
	cause   error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.StatusCode, e.Detail.Code, e.Detail.Message, e.cause)
	}
	return fmt.Sprintf("%d %s: %s", e.StatusCode, e.Detail.Code, e.Detail.Message)
}

// Unwrap returns the internal cause, which is logged but never sent.
func (e *Error) Unwrap() error { return e.cause }

// New builds a gateway-originated error.
func New(status int, typ, code, message string) *Error {
	id := NewEventID()
	return &Error{
		EventID:        id,
		Type:           typ,
		IsGatewayError: true,
		StatusCode:     status,
		Detail:         Detail{Type: typ, Code: code, Message: message, EventID: id},
	}
}

// WithParam names the offending request field.
func (e *Error) WithParam(p string) *Error { e.Detail.Param = p; return e }

// WithCause attaches an internal cause for logs.
func (e *Error) WithCause(err error) *Error { e.cause = err; return e }

// WithHeader adds a response header.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[k] = v
	return e
}

// WithExtra sets extra_fields.
func (e *Error) WithExtra(x *ExtraFields) *Error { e.ExtraFields = x; return e }

// BadRequest is a 400 naming the offending field.
func BadRequest(code, param, message string) *Error {
	return New(http.StatusBadRequest, TypeInvalidRequest, code, message).WithParam(param)
}

// NotFound is a 404 for a missing resource.
func NotFound(what, id string) *Error {
	return New(http.StatusNotFound, TypeNotFound, "not_found", fmt.Sprintf("%s %q not found", what, id))
}

// Conflict is a 409.
func Conflict(code, message string) *Error {
	return New(http.StatusConflict, TypeConflict, code, message)
}

// Unauthorized is a 401.
func Unauthorized(code, message string) *Error {
	return New(http.StatusUnauthorized, TypeAuthentication, code, message)
}

// Forbidden is a 403.
func Forbidden(code, message string) *Error {
	return New(http.StatusForbidden, TypePermission, code, message)
}

// Internal is a 500 whose cause is logged, not sent.
func Internal(err error) *Error {
	return New(http.StatusInternalServerError, TypeInternal, "internal_error",
		"the gateway failed to handle the request; see the gateway log for the event id").WithCause(err)
}

// As extracts an *Error from err, or converts any other error into a 500.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Internal(err)
}

// NewEventID returns a random 128-bit hex id correlating a response with log lines.
func NewEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
