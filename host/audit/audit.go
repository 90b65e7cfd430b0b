// Package audit records every management mutation: who did what, when, to
// which resource, with the request and the resulting resource summarised
// and secrets redacted. The auth router wraps every mutating route with
// Middleware, so a new route cannot forget to audit.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/clientip"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

const ns = "audit_logs"

// maxSummary caps each redacted body summary.
const maxSummary = 8 << 10

// Record is one audit log entry.
type Record struct {
	ID         string            `json:"id"`
	Timestamp  time.Time         `json:"timestamp"`
	ActorKind  string            `json:"actor_kind"`
	UserID     string            `json:"user_id"`
	Action     string            `json:"action"`
	Method     string            `json:"method"`
	Route      string            `json:"route"`
	Path       string            `json:"path"`
	Resource   string            `json:"resource"`
	ResourceID string            `json:"resource_id,omitempty"`
	Params     map[string]string `json:"params,omitempty"`
	StatusCode int               `json:"status_code"`
	Outcome    string            `json:"outcome"`
	ClientIP   string            `json:"client_ip"`
	UserAgent  string            `json:"user_agent,omitempty"`
	Request    any               `json:"request,omitempty"`
	After      any               `json:"after,omitempty"`
}

// Actor tells the audit middleware who the caller is; auth provides it.
type Actor func(c *fiber.Ctx) (kind, id string)

// Log writes and lists audit records.
type Log struct {
	st    store.Store
	log   *slog.Logger
	actor Actor
	now   func() time.Time
}

// New returns an audit log on st.
func New(st store.Store, log *slog.Logger, actor Actor) *Log {
	return &Log{st: st, log: log, actor: actor, now: time.Now}
}

// Middleware records the request after the handler ran. It writes before
// the response leaves, so an acknowledged mutation always has its record.
func (l *Log) Middleware(resource string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := c.Next()
		status := c.Response().StatusCode()
		if err != nil {
			status = apierr.As(err).StatusCode
			var fe *fiber.Error
			if errors.As(err, &fe) {
				status = fe.Code
			}
		}
		kind, id := l.actor(c)
		rec := Record{
			ID: uuid.Must(uuid.NewV7()).String(), Timestamp: l.now().UTC(),
			ActorKind: kind, UserID: id, Method: c.Method(), Route: c.Route().Path, Path: c.Path(),
			Resource: resource, StatusCode: status, ClientIP: clientip.Of(c), UserAgent: c.Get(fiber.HeaderUserAgent),
			Action: actionOf(c.Method(), resource),
		}
		rec.Outcome = "success"
		if status >= 400 {
			rec.Outcome = "failure"
		}
		if params := c.AllParams(); len(params) > 0 {
			rec.Params = params
			rec.ResourceID = firstParam(c.Route().Params, params)
		}
		if r := Redact(c.Body(), maxSummary); r != nil {
			rec.Request = r
		}
		if err == nil && status < 400 && strings.HasPrefix(string(c.Response().Header.ContentType()), "application/json") {
			if r := Redact(c.Response().Body(), maxSummary); r != nil {
				rec.After = r
			}
		}
		if werr := l.write(c.UserContext(), &rec); werr != nil {
			l.log.Error("audit record not written", "action", rec.Action, "path", rec.Path, "error", werr)
		}
		return err
	}
}

func firstParam(order []string, params map[string]string) string {
	if len(order) > 0 {
		return params[order[len(order)-1]]
	}
	return ""
}

// actionOf names the action "<resource>.<verb>", e.g. "Providers.Update".
func actionOf(method, resource string) string {
	verb := map[string]string{"POST": "Create", "PUT": "Update", "PATCH": "Update", "DELETE": "Delete"}[method]
	if verb == "" {
		verb = method
	}
	return resource + "." + verb
}

func (l *Log) write(ctx context.Context, r *Record) error {
	// The key sorts by time (UUIDv7), so listings scan newest first cheaply.
	return l.st.Update(context.WithoutCancel(ctx), func(tx store.Tx) error { return store.PutJSON(tx, ns, r.ID, r) })
}

// Query filters a listing.
type Query struct {
	Limit, Offset  int
	Action, UserID string
	Resource       string
	Since, Until   time.Time
}

// List returns matching records newest first and the total count.
func (l *Log) List(ctx context.Context, q Query) ([]Record, int, error) {
	var out []Record
	total := 0
	err := l.st.View(ctx, func(tx store.Tx) error {
		return tx.Scan(ns, store.ScanOptions{Reverse: true}, func(_ string, v []byte) error {
			var r Record
			if err := jsonUnmarshal(v, &r); err != nil {
				return err
			}
			if !q.match(&r) {
				return nil
			}
			if total >= q.Offset && len(out) < q.Limit {
				out = append(out, r)
			}
			total++
			return nil
		})
	})
	return out, total, err
}

func (q *Query) match(r *Record) bool {
	if q.Action != "" && !strings.EqualFold(q.Action, r.Action) && !strings.EqualFold(q.Action, r.Method) {
		return false
	}
	if q.UserID != "" && q.UserID != r.UserID {
		return false
	}
	if q.Resource != "" && !strings.EqualFold(q.Resource, r.Resource) {
		return false
	}
	if !q.Since.IsZero() && r.Timestamp.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && r.Timestamp.After(q.Until) {
		return false
	}
	return true
}

// Handler serves GET audit-logs with limit, offset, action, user_id,
// resource, start_time and end_time.
func (l *Log) Handler(c *fiber.Ctx) error {
	var q Query
	var e *apierr.Error
	if q.Limit, q.Offset, e = listing.Page(c, 1000); e != nil {
		return e
	}
	var err error
	for name, dst := range map[string]*time.Time{"start_time": &q.Since, "end_time": &q.Until} {
		if v := c.Query(name); v != "" {
			if *dst, err = time.Parse(time.RFC3339, v); err != nil {
				return apierr.BadRequest("invalid_parameter", name, fmt.Sprintf("%s must be an RFC 3339 time", name))
			}
		}
	}
	q.Action, q.UserID, q.Resource = c.Query("action"), c.Query("user_id"), c.Query("resource")
	recs, total, err := l.List(c.UserContext(), q)
	if err != nil {
		return apierr.Internal(err)
	}
	if recs == nil {
		recs = []Record{}
	}
	return c.JSON(fiber.Map{"audit_logs": recs, "total_count": total, "count": len(recs), "limit": q.Limit, "offset": q.Offset})
}
