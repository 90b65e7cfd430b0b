// Package listing holds the paging convention every /api list follows:
// `limit` (default DefaultLimit, at most the list's maximum) and `offset`
// query parameters, answered as {<plural>, count, total_count, limit, offset}.
package listing

import (
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
)

// Limits of the paging convention.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Page reads limit and offset; max bounds limit (MaxLimit for most lists).
// Bad values are a 400 naming the parameter.
func Page(c *fiber.Ctx, max int) (limit, offset int, e *apierr.Error) {
	limit = DefaultLimit
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > max {
			return 0, 0, apierr.BadRequest("invalid_parameter", "limit", fmt.Sprintf("limit must be an integer between 1 and %d", max))
		}
		limit = n
	}
	if v := c.Query("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, apierr.BadRequest("invalid_parameter", "offset", "offset must be a non-negative integer")
		}
		offset = n
	}
	return limit, offset, nil
}

// Window returns the page of items at offset, never nil.
func Window[T any](items []T, limit, offset int) []T {
	if offset >= len(items) {
		return []T{}
	}
	return items[offset:min(len(items), offset+limit)]
}
