package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/host/secret"
	"github.com/wasmgate/gateway/store"
)

// Routes registers the management API. Sending a test or redelivering
// causes outbound traffic under the endpoint's identity, so both need
// Webhooks:Update rather than View.
func (s *Service) Routes(api *auth.Router) {
	view, create := auth.Perm("Webhooks", "View"), auth.Perm("Webhooks", "Create")
	upd, del := auth.Perm("Webhooks", "Update"), auth.Perm("Webhooks", "Delete")
	api.Get("/webhooks", view, s.list)
	api.Post("/webhooks", create, s.create)
	// Registered before /webhooks/:id so "deliveries" is not taken for an id.
	api.Get("/webhooks/deliveries/:id", view, s.getDelivery)
	api.Post("/webhooks/deliveries/:id/redeliver", upd, s.redeliver)
	api.Get("/webhooks/:id", view, s.get)
	api.Put("/webhooks/:id", upd, s.put)
	api.Delete("/webhooks/:id", del, s.delete)
	api.Post("/webhooks/:id/rotate-secret", upd, s.rotateSecret)
	api.Post("/webhooks/:id/test", upd, s.test)
	api.Get("/webhooks/:id/deliveries", view, s.listDeliveries)
}

// withSecret is the create and rotate answer: the endpoint plus the signing
// secret, shown this once.
type withSecret struct {
	Endpoint
	Secret string `json:"secret"`
}

func (s *Service) list(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	search := strings.ToLower(strings.TrimSpace(c.Query("search")))
	var events []string
	for _, ev := range strings.Split(c.Query("events"), ",") {
		if ev = strings.TrimSpace(ev); ev == "" {
			continue
		}
		if !isKnownEvent(ev) {
			return apierr.BadRequest("invalid_value", "events", "unknown event "+strconv.Quote(ev)+" (use "+strings.Join(knownEvents, " or ")+")")
		}
		events = append(events, ev)
	}
	var disabled *bool
	switch v := c.Query("disabled"); v {
	case "":
	case "true", "false":
		b := v == "true"
		disabled = &b
	default:
		return apierr.BadRequest("invalid_value", "disabled", "disabled must be true or false")
	}
	var recs []record
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		recs, err = store.ListJSON[record](tx, nsEndpoints, store.ScanOptions{})
		return err
	})
	if err != nil {
		return apierr.Internal(err)
	}
	// UUIDv7 ids: id order is creation order.
	sort.Slice(recs, func(i, j int) bool { return recs[i].ID < recs[j].ID })
	matched := make([]Endpoint, 0, len(recs))
	for i := range recs {
		r := &recs[i]
		if search != "" && !strings.Contains(strings.ToLower(r.Name), search) && !strings.Contains(strings.ToLower(r.URL), search) {
			continue
		}
		if disabled != nil && r.Disabled != *disabled {
			continue
		}
		if len(events) > 0 && !anySubscribed(&r.Endpoint, events) {
			continue
		}
		matched = append(matched, r.public())
	}
	out := listing.Window(matched, limit, offset)
	return c.JSON(fiber.Map{"endpoints": out, "count": len(out), "total_count": len(matched), "limit": limit, "offset": offset})
}

func anySubscribed(e *Endpoint, events []string) bool {
	for _, ev := range events {
		if e.Subscribed(ev) {
			return true
		}
	}
	return false
}

func (s *Service) create(c *fiber.Ctx) error {
	var in Input
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	ep, ferr := in.normalize()
	if ferr != nil {
		return ferr.api()
	}
	now := s.now().UTC()
	sec := NewSecret()
	r := record{Endpoint: ep, Secret: secret.MustPlain(sec)}
	r.ID, r.CreatedAt, r.UpdatedAt = newEndpointID(), now, now
	err := s.update(c.UserContext(), func(tx store.Tx) error { return putEndpoint(tx, &r, "") })
	if err != nil {
		return storeErr(err, "webhook endpoint", "")
	}
	return c.Status(http.StatusCreated).JSON(withSecret{Endpoint: r.public(), Secret: sec})
}

func (s *Service) get(c *fiber.Ctx) error {
	var r record
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		r, err = store.GetJSON[record](tx, nsEndpoints, c.Params("id"))
		return err
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", c.Params("id"))
	}
	return c.JSON(r.public())
}

func (s *Service) put(c *fiber.Ctx) error {
	id := c.Params("id")
	var in updateInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if in.ID != nil && *in.ID != id {
		return apierr.BadRequest("immutable_field", "id", "id cannot be changed")
	}
	var r record
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		r, err = store.GetJSON[record](tx, nsEndpoints, id)
		if err != nil {
			return err
		}
		if in.CreatedAt != nil && !in.CreatedAt.Equal(r.CreatedAt) {
			return apierr.BadRequest("immutable_field", "created_at", "created_at cannot be changed")
		}
		// A header sent back as its redacted form keeps the stored value.
		input := in.Input
		if input.Headers != nil {
			hs := make(map[string]secret.Value, len(input.Headers))
			for name, v := range input.Headers {
				hs[name] = secret.KeepIfMasked(v, r.Headers[name])
			}
			input.Headers = hs
		}
		ep, ferr := input.normalize()
		if ferr != nil {
			return ferr.api()
		}
		oldName := r.Name
		applySettings(&r.Endpoint, &ep)
		r.UpdatedAt = s.now().UTC()
		return putEndpoint(tx, &r, oldName)
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", id)
	}
	return c.JSON(r.public())
}

func (s *Service) delete(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		r, err := store.GetJSON[record](tx, nsEndpoints, id)
		if err != nil {
			return err
		}
		if err := tx.Delete(nsNames, r.Name); err != nil {
			return err
		}
		return tx.Delete(nsEndpoints, id)
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", id)
	}
	// History goes with the endpoint, in bounded batches. Queued deliveries
	// still in the due queue fail with "endpoint was deleted" if reached first.
	if err := s.deleteHistory(c.UserContext(), id); err != nil {
		s.log.Warn("webhooks: delete endpoint history", "endpoint_id", id, "error", err)
	}
	return c.JSON(fiber.Map{"status": "success", "message": "webhook endpoint deleted"})
}

func (s *Service) deleteHistory(ctx context.Context, endpointID string) error {
	for {
		var keys []string
		err := s.st.View(ctx, func(tx store.Tx) error {
			return tx.Scan(nsByEndpoint, store.ScanOptions{Prefix: endpointID + "/"}, func(key string, _ []byte) error {
				keys = append(keys, key)
				if len(keys) >= pruneBatch {
					return store.ErrStopScan
				}
				return nil
			})
		})
		if err != nil || len(keys) == 0 {
			return err
		}
		err = s.update(ctx, func(tx store.Tx) error {
			for _, k := range keys {
				d, err := store.GetJSON[Delivery](tx, nsDeliveries, strings.TrimPrefix(k, endpointID+"/"))
				if err == nil && d.NextAttemptAt != nil {
					if err := tx.Delete(nsDue, dueKey(*d.NextAttemptAt, d.ID)); err != nil {
						return err
					}
				}
				if err := tx.Delete(nsDeliveries, strings.TrimPrefix(k, endpointID+"/")); err != nil {
					return err
				}
				if err := tx.Delete(nsByEndpoint, k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

func (s *Service) rotateSecret(c *fiber.Ctx) error {
	id := c.Params("id")
	sec := NewSecret()
	var r record
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		var err error
		r, err = store.GetJSON[record](tx, nsEndpoints, id)
		if err != nil {
			return err
		}
		r.Secret, r.UpdatedAt = secret.MustPlain(sec), s.now().UTC()
		return store.PutJSON(tx, nsEndpoints, id, r)
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", id)
	}
	return c.JSON(withSecret{Endpoint: r.public(), Secret: sec})
}

type testRequest struct {
	Event string `json:"event"`
}

// test queues a synthetic delivery through the real engine. It is sent
// even when the endpoint is not subscribed to the event (that is what a
// test is for), but not to a disabled endpoint.
func (s *Service) test(c *fiber.Ctx) error {
	id := c.Params("id")
	var req testRequest
	if e := apierr.DecodeJSON(c.Body(), &req); e != nil {
		return e
	}
	if req.Event == "" {
		return apierr.BadRequest("missing_field", "event", "event is required: "+strings.Join(knownEvents, " or "))
	}
	if !isKnownEvent(req.Event) {
		return apierr.BadRequest("invalid_value", "event", "unknown event "+strconv.Quote(req.Event)+" (use "+strings.Join(knownEvents, " or ")+")")
	}
	var did string
	err := s.update(c.UserContext(), func(tx store.Tx) error {
		r, err := store.GetJSON[record](tx, nsEndpoints, id)
		if err != nil {
			return err
		}
		if r.Disabled {
			return apierr.Conflict("endpoint_disabled", "the endpoint is disabled; enable it to send a test delivery")
		}
		body, err := BuildEventBody(testJob(req.Event, s.now()), r.IncludeResponse, r.MaxResponsePayloadKBs)
		if err != nil {
			return err
		}
		did, err = s.enqueueRecord(tx, &r.Endpoint, req.Event, body, nil, true)
		return err
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", id)
	}
	s.Wake()
	return c.Status(http.StatusAccepted).JSON(fiber.Map{"delivery_id": did, "event": req.Event, "state": StatePending})
}

// testJob is the synthetic job a test delivery describes.
func testJob(event string, now time.Time) JobFacts {
	jobID := "job_test_" + uuid.Must(uuid.NewV7()).String()
	f := JobFacts{
		JobID: jobID, RequestType: "chat_completion", Status: "completed", StatusCode: http.StatusOK,
		ResultURL: "/v1/async/chat/completions/" + jobID, ResultExpiresAt: now.Add(time.Hour), CompletedAt: now,
		Response: json.RawMessage(`{"object":"chat.completion","test":true,"choices":[{"index":0,"message":{"role":"assistant","content":"This is a test delivery."},"finish_reason":"stop"}]}`),
	}
	if event == EventJobFailed {
		f.Status, f.StatusCode, f.Response = "failed", http.StatusBadGateway, nil
		f.Error = json.RawMessage(`{"error":{"type":"upstream_error","message":"This is a test delivery."}}`)
	}
	return f
}

func (s *Service) listDeliveries(c *fiber.Ctx) error {
	id := c.Params("id")
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	out := []Delivery{}
	total := 0
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		if _, err := store.GetJSON[record](tx, nsEndpoints, id); err != nil {
			return err
		}
		// Reverse key order on time-sortable ids: newest first.
		return tx.Scan(nsByEndpoint, store.ScanOptions{Prefix: id + "/", Reverse: true}, func(key string, _ []byte) error {
			total++
			if total <= offset || len(out) >= limit {
				return nil
			}
			d, err := store.GetJSON[Delivery](tx, nsDeliveries, strings.TrimPrefix(key, id+"/"))
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			d.Payload = nil // listings stay small; GET one delivery for its body
			out = append(out, d)
			return nil
		})
	})
	if err != nil {
		return storeErr(err, "webhook endpoint", id)
	}
	return c.JSON(fiber.Map{"deliveries": out, "count": len(out), "total_count": total, "limit": limit, "offset": offset})
}

func (s *Service) getDelivery(c *fiber.Ctx) error {
	d, err := s.GetDelivery(c.UserContext(), c.Params("id"))
	if err != nil {
		return storeErr(err, "webhook delivery", c.Params("id"))
	}
	return c.JSON(d)
}

func (s *Service) redeliver(c *fiber.Ctx) error {
	d, err := s.Redeliver(c.UserContext(), c.Params("id"))
	switch {
	case errors.Is(err, errStillQueued):
		return apierr.Conflict("delivery_in_progress", "the delivery is still queued or being attempted; redeliver it once it is delivered, failed or skipped")
	case errors.Is(err, errEndpointGone):
		return apierr.Conflict("endpoint_deleted", "the delivery's endpoint was deleted")
	case err != nil:
		return storeErr(err, "webhook delivery", c.Params("id"))
	}
	return c.Status(http.StatusAccepted).JSON(fiber.Map{"delivery_id": d.ID, "state": d.State})
}

// storeErr maps store and validation failures onto the error envelope.
func storeErr(err error, what, id string) error {
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound(what, id)
	case errors.Is(err, errNameTaken):
		return apierr.Conflict("name_taken", "another webhook endpoint already has this name").WithParam("name")
	}
	return apierr.Internal(err)
}
