package logs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
)

// List limits of GET /api/logs.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Routes registers the logs API on api (the /api router). A nil Logger
// (logs.enabled false) still registers the routes so clients get a clear
// 503 instead of a 404.
func (l *Logger) Routes(api *auth.Router) {
	api.Get("/logs", auth.Perm("Logs", "View"), l.handleList)
	api.Get("/logs/stats", auth.Perm("Logs", "View"), l.handleStats)
	api.Get("/logs/:id", auth.Perm("Logs", "View"), l.handleGet)
	api.Delete("/logs", auth.Perm("Logs", "Delete"), l.handleDelete)
}

func (l *Logger) available() error {
	if l == nil {
		return apierr.New(fiber.StatusServiceUnavailable, apierr.TypeUnavailable, "logs_disabled",
			"the logs store is disabled (logs.enabled is false)")
	}
	return nil
}

// Query parameters each route accepts; anything else is a 400 so a
// misspelt filter never silently widens a query or a delete.
var (
	filterParams = []string{"start_time", "end_time", "providers", "models", "objects", "status",
		"virtual_key_ids", "key_ids", "min_latency", "max_latency", "content_search"}
	listParams   = append([]string{"limit", "offset", "after", "order", "include_content"}, filterParams...)
	deleteParams = append([]string{"older_than"}, filterParams...)
)

func checkParams(c *fiber.Ctx, allowed []string) error {
	var bad string
	c.Context().QueryArgs().VisitAll(func(k, _ []byte) {
		if bad != "" {
			return
		}
		name := string(k)
		for _, a := range allowed {
			if a == name {
				return
			}
		}
		bad = name
	})
	if bad != "" {
		return apierr.BadRequest("unknown_parameter", bad,
			fmt.Sprintf("unknown query parameter %q (accepted: %s)", bad, strings.Join(allowed, ", ")))
	}
	return nil
}

func parseFilter(c *fiber.Ctx) (Filter, error) {
	var f Filter
	var err error
	if f.Start, err = timeParam(c, "start_time"); err != nil {
		return f, err
	}
	if f.End, err = timeParam(c, "end_time"); err != nil {
		return f, err
	}
	if !f.Start.IsZero() && !f.End.IsZero() && f.End.Before(f.Start) {
		return f, apierr.BadRequest("invalid_time_range", "end_time", "end_time is before start_time")
	}
	f.Providers = listParam(c, "providers")
	f.Models = listParam(c, "models")
	f.Objects = listParam(c, "objects")
	f.VirtualKeyIDs = listParam(c, "virtual_key_ids")
	f.KeyIDs = listParam(c, "key_ids")
	switch s := c.Query("status"); s {
	case "", StatusSuccess, StatusError:
		f.Status = s
	default:
		return f, apierr.BadRequest("invalid_parameter", "status", fmt.Sprintf("status must be success or error (got %q)", s))
	}
	if f.MinLatency, err = floatParam(c, "min_latency"); err != nil {
		return f, err
	}
	if f.MaxLatency, err = floatParam(c, "max_latency"); err != nil {
		return f, err
	}
	if f.MinLatency != nil && f.MaxLatency != nil && *f.MaxLatency < *f.MinLatency {
		return f, apierr.BadRequest("invalid_parameter", "max_latency", "max_latency is below min_latency")
	}
	f.ContentSearch = strings.TrimSpace(c.Query("content_search"))
	return f, nil
}

func timeParam(c *fiber.Ctx, name string) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, apierr.BadRequest("invalid_parameter", name,
			fmt.Sprintf("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", name, v))
	}
	return t, nil
}

func listParam(c *fiber.Ctx, name string) []string {
	v := c.Query(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func floatParam(c *fiber.Ctx, name string) (*float64, error) {
	v := c.Query(name)
	if v == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f != f {
		return nil, apierr.BadRequest("invalid_parameter", name,
			fmt.Sprintf("%s must be a non-negative number of milliseconds (got %q)", name, v))
	}
	return &f, nil
}

func intParam(c *fiber.Ctx, name string, def, lo, hi int) (int, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, apierr.BadRequest("invalid_parameter", name,
			fmt.Sprintf("%s must be an integer from %d to %d (got %q)", name, lo, hi, v))
	}
	return n, nil
}

// listResponse follows the management list convention.
type listResponse struct {
	Logs       []*Record `json:"logs"`
	Count      int       `json:"count"`
	TotalCount int       `json:"total_count"`
	Limit      int       `json:"limit"`
	Offset     int       `json:"offset"`
	HasMore    bool      `json:"has_more"`
	NextCursor string    `json:"next_cursor,omitempty"`
	Truncated  bool      `json:"truncated"`
}

func (l *Logger) handleList(c *fiber.Ctx) error {
	if err := l.available(); err != nil {
		return err
	}
	if err := checkParams(c, listParams); err != nil {
		return err
	}
	f, err := parseFilter(c)
	if err != nil {
		return err
	}
	var p Page
	if p.Limit, err = intParam(c, "limit", DefaultLimit, 1, MaxLimit); err != nil {
		return err
	}
	if p.Offset, err = intParam(c, "offset", 0, 0, l.opts.MaxScanRecords); err != nil {
		return err
	}
	switch o := c.Query("order"); o {
	case "", "desc":
	case "asc":
		p.Ascending = true
	default:
		return apierr.BadRequest("invalid_parameter", "order", fmt.Sprintf("order must be asc or desc (got %q)", o))
	}
	p.After = c.Query("after")
	includeContent := false
	if v := c.Query("include_content"); v != "" {
		if includeContent, err = strconv.ParseBool(v); err != nil {
			return apierr.BadRequest("invalid_parameter", "include_content", "include_content must be true or false")
		}
	}
	res, err := l.Query(c.UserContext(), f, p)
	if errors.Is(err, ErrBadCursor) {
		return apierr.BadRequest("invalid_parameter", "after", "after must be a next_cursor value returned by GET /api/logs")
	}
	if err != nil {
		return apierr.Internal(err)
	}
	if !includeContent {
		for _, r := range res.Logs {
			r.Input, r.Output = "", ""
		}
	}
	return c.JSON(listResponse{Logs: res.Logs, Count: len(res.Logs), TotalCount: res.TotalCount, Limit: p.Limit,
		Offset: p.Offset, HasMore: res.HasMore, NextCursor: res.NextCursor, Truncated: res.Truncated})
}

func (l *Logger) handleGet(c *fiber.Ctx) error {
	if err := l.available(); err != nil {
		return err
	}
	id := c.Params("id")
	r, err := l.Get(c.UserContext(), id)
	if errors.Is(err, ErrNotFound) {
		return apierr.NotFound("log", id)
	}
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(r)
}

func (l *Logger) handleStats(c *fiber.Ctx) error {
	if err := l.available(); err != nil {
		return err
	}
	if err := checkParams(c, filterParams); err != nil {
		return err
	}
	f, err := parseFilter(c)
	if err != nil {
		return err
	}
	s, err := l.Stats(c.UserContext(), f)
	if err != nil {
		return apierr.Internal(err)
	}
	return c.JSON(s)
}

func (l *Logger) handleDelete(c *fiber.Ctx) error {
	if err := l.available(); err != nil {
		return err
	}
	if err := checkParams(c, deleteParams); err != nil {
		return err
	}
	f, err := parseFilter(c)
	if err != nil {
		return err
	}
	if v := c.Query("older_than"); v != "" {
		d, err := parseAge(v)
		if err != nil {
			return apierr.BadRequest("invalid_parameter", "older_than",
				fmt.Sprintf("older_than must be a positive duration such as 30d or 12h (got %q)", v))
		}
		cutoff := l.opts.Now().Add(-d).Add(-time.Nanosecond)
		if f.End.IsZero() || cutoff.Before(f.End) {
			f.End = cutoff
		}
	}
	if len(c.Context().QueryArgs().QueryString()) == 0 {
		// Deleting everything by omission is too easy a mistake.
		return apierr.BadRequest("filter_required", "older_than",
			"DELETE /api/logs needs at least one filter or older_than; use start_time=1970-01-01T00:00:00Z to delete everything")
	}
	n, err := l.Delete(c.UserContext(), f)
	if err != nil {
		return apierr.Internal(fmt.Errorf("deleted %d records, then: %w", n, err))
	}
	l.log.Info("request logs deleted", "deleted", n, "query", string(c.Context().QueryArgs().QueryString()))
	return c.JSON(fiber.Map{"status": "success", "message": fmt.Sprintf("%d log records deleted", n), "deleted": n})
}

// parseAge reads "30d" (days) or a Go duration ("12h", "90m").
func parseAge(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days <= 0 {
			return 0, errors.New("bad days")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, errors.New("bad duration")
	}
	return d, nil
}
