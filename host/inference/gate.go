package inference

import (
	"context"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/routing"
)

// Gate admits a request before any provider is called and settles it when
// its outcome is final. Governance implements it (virtual keys, budgets,
// rate limits); inference depends only on this interface.
type Gate interface {
	// Admit checks the caller and reserves what the request may consume.
	// A non-nil error refuses the request with that envelope. A nil
	// Ticket with a nil error admits a request governance does not track.
	Admit(ctx context.Context, a *Admission) (Ticket, *apierr.Error)
}

// Admission is what the gate sees of a request. Its strings and Body
// alias request buffers: valid only during Admit.
type Admission struct {
	RequestType string
	// Candidates are the credentials presented, in the order a virtual key
	// is looked for: x-gw-vk, x-api-key, Authorization bearer.
	VirtualKeyHeader string
	APIKeyHeader     string
	Bearer           string
	// Targets are the primary target, then the fallbacks. A bare primary
	// (no provider: the client sent a model without "<provider>/") must be
	// routed by the gate: it sets Targets to the routed plan, chosen target
	// first, or refuses the request. A gate that leaves it bare (a request
	// without a virtual key) gets the request refused by inference.
	Targets []routing.Target
	Stream  bool
	Body    []byte
}

// Ticket is an admitted request's reservation.
type Ticket interface {
	// VirtualKeyID is the virtual key the request authenticated with ("" for none).
	VirtualKeyID() string
	// AllowsKey reports whether the provider key may serve this request
	// (virtual keys can be restricted to chosen provider keys).
	AllowsKey(provider, keyID string) bool
	// Settle replaces the reservation with the real usage of o; called
	// exactly once, when the outcome is final (stream end and client
	// disconnect included; a failed request releases its reservation).
	Settle(o *Outcome)
}

// admit runs the gate for a parsed call; it fills the call's ticket and,
// for a bare model, takes the plan the gate routed. A bare model nobody
// routed is refused here: there is no provider to send it to.
func (s *Service) admit(ctx context.Context, cl *call, vkHeader, apiKey, bearer string) *apierr.Error {
	bare := cl.p.plan.Targets[0].Bare()
	if s.o.Gate != nil {
		a := &Admission{RequestType: cl.reqType, VirtualKeyHeader: vkHeader, APIKeyHeader: apiKey,
			Bearer: bearer, Targets: cl.p.plan.Targets, Stream: cl.p.stream, Body: cl.p.body}
		t, aerr := s.o.Gate.Admit(ctx, a)
		if aerr != nil {
			return aerr
		}
		if t != nil {
			cl.ticket = t
			cl.out.VirtualKeyID = t.VirtualKeyID()
		}
		if bare {
			cl.p.plan.Targets = a.Targets
		}
	}
	if cl.p.plan.Targets[0].Bare() {
		// The caller's ticket, if any, is settled by the error's record.
		return bareModelError(cl.p.model)
	}
	cl.routed = bare
	return nil
}

// bareModelError refuses a model without "<provider>/" that no virtual key
// routed.
func bareModelError(model string) *apierr.Error {
	return apierr.BadRequest("invalid_model", "model", fmt.Sprintf(
		`model %q names no provider: send "<provider>/<model>" (for example "openai/%s"), or authenticate with a virtual key whose provider_configs route bare model names`,
		model, model))
}

// settle hands the final outcome to the ticket once.
func (cl *call) settle() {
	if t := cl.ticket; t != nil {
		cl.ticket = nil
		t.Settle(&cl.out)
	}
}

// allowedKeys drops the provider keys the ticket does not allow.
func (cl *call) allowedKeys(provider string, keys []routing.Key) []routing.Key {
	if cl.ticket == nil {
		return keys
	}
	for i, k := range keys {
		if !cl.ticket.AllowsKey(provider, k.ID) {
			// Copy only when something is dropped (most tickets allow all).
			out := append(keys[:i:i], keys[i+1:]...)
			return cl.allowedKeys(provider, out)
		}
	}
	return keys
}

// virtualKeyPrefix starts every virtual key; inference only uses it to
// find a key presented in a drop-in family's own credential slot.
const virtualKeyPrefix = "sk-gw-"

// HeaderVirtualKey carries a virtual key on any inference route (the async
// API's documented header, accepted everywhere).
const HeaderVirtualKey = "x-gw-vk"

// gateCredentials are the credentials the gate looks for a virtual key in:
// x-gw-vk, x-api-key and the bearer token. GenAI (x-goog-api-key, ?key=)
// and Bedrock (the SigV4 access key id) clients carry a virtual key in
// their family's own place, which caller (callerCredential) holds.
func gateCredentials(c *fiber.Ctx, caller string) (vk, apiKey, bearer string) {
	apiKey = c.Get("x-api-key")
	if apiKey == "" && strings.HasPrefix(caller, virtualKeyPrefix) {
		apiKey = caller
	}
	return c.Get(HeaderVirtualKey), apiKey, bearerToken(c)
}

// bearerToken is the token of an Authorization: Bearer header, or "".
func bearerToken(c *fiber.Ctx) string {
	auth := c.Get(fiber.HeaderAuthorization)
	if len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}
