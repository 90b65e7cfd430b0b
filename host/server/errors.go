package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
)

// errorHandler writes every error as the envelope. Fiber's own errors
// (unknown route, oversized body, bad method) are mapped too, so no client
// ever sees a plain-text error.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		e := toEnvelope(c, err)
		if e.StatusCode >= 500 {
			log.Error("request failed", "event_id", e.EventID, "method", c.Method(), "path", c.Path(),
				"status", e.StatusCode, "error", err)
		}
		for k, v := range e.Headers {
			c.Set(k, v)
		}
		return c.Status(e.StatusCode).JSON(e)
	}
}

func toEnvelope(c *fiber.Ctx, err error) *apierr.Error {
	var fe *fiber.Error
	if errors.As(err, &fe) {
		switch fe.Code {
		case http.StatusNotFound:
			return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "route_not_found",
				fmt.Sprintf("no route for %s %s", c.Method(), c.Path()))
		case http.StatusRequestEntityTooLarge:
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.TypeInvalidRequest, "body_too_large",
				"request body exceeds the configured size limit (server.max_body_bytes)")
		case http.StatusMethodNotAllowed:
			return apierr.New(http.StatusMethodNotAllowed, apierr.TypeInvalidRequest, "method_not_allowed",
				fmt.Sprintf("method %s is not allowed on %s", c.Method(), c.Path()))
		case http.StatusUnprocessableEntity, http.StatusBadRequest:
			return apierr.New(fe.Code, apierr.TypeInvalidRequest, "bad_request", fe.Message)
		case http.StatusRequestTimeout:
			return apierr.New(fe.Code, apierr.TypeInvalidRequest, "request_timeout", fe.Message)
		}
		typ := apierr.TypeInvalidRequest
		if fe.Code >= 500 {
			typ = apierr.TypeInternal
		}
		return apierr.New(fe.Code, typ, strings.ToLower(strings.ReplaceAll(http.StatusText(fe.Code), " ", "_")), fe.Message)
	}
	return apierr.As(err)
}

// recoverer turns a handler panic into a 500 envelope and a logged stack,
// so a bug answers one request badly instead of killing the connection.
func recoverer(log *slog.Logger) fiber.Handler {
	return func(c *fiber.Ctx) (err error) {
		defer func() {
			if r := recover(); r != nil {
				e := apierr.Internal(fmt.Errorf("panic: %v", r))
				log.Error("handler panic", "event_id", e.EventID, "path", c.Path(), "panic", r, "stack", string(debug.Stack()))
				err = e
			}
		}()
		return c.Next()
	}
}
