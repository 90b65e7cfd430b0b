package governance

import (
	"context"
	"crypto/subtle"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/inference"
	"github.com/wasmgate/gateway/host/routing"
	"github.com/wasmgate/gateway/pluginsdk/jsonx"
	"github.com/wasmgate/gateway/store/counters"
)

// nanoUSD is the unit budgets are counted in: integers keep reservations
// exact, and int64 nano-dollars reach 9 billion USD.
const nanoUSD = 1e9

func toNano(usd float64) int64 {
	if usd <= 0 || math.IsNaN(usd) {
		return 0
	}
	return int64(math.Ceil(usd * nanoUSD))
}

// charge kinds, in the order a ticket holds them per level.
const (
	kindBudget = iota
	kindRequests
	kindTokens
)

// maxCharges is three counters for each of three levels.
const maxCharges = 9

// ticket is one admitted request's reservation.
type ticket struct {
	s         *Service
	e         *entry
	charges   [maxCharges]counters.Charge
	kinds     [maxCharges]int8
	n         int
	estCost   int64
	estTokens int64
}

var _ inference.Gate = (*Service)(nil)

// Admit implements inference.Gate.
func (s *Service) Admit(ctx context.Context, a *inference.Admission) (inference.Ticket, *apierr.Error) {
	now := s.now()
	e, aerr := s.caller(a.VirtualKeyHeader, a.APIKeyHeader, a.Bearer, now)
	if aerr != nil || e == nil {
		return nil, aerr
	}
	if a.Targets[0].Bare() {
		routed, aerr := e.routeBare(a.Targets, s.rnd)
		if aerr != nil {
			return nil, aerr
		}
		a.Targets = routed
	}
	if aerr := e.allows(a.Targets); aerr != nil {
		return nil, aerr
	}
	t := &ticket{s: s, e: e}
	primary := a.Targets[0]
	prompt := int64(len(a.Body)) / 4
	completion := int64(0)
	switch a.RequestType {
	case inference.TypeEmbedding, inference.TypeRerank, inference.TypeCountTokens:
		// These answer no generated tokens: only the input is billed.
	default:
		completion = s.completionEstimate(a.Body)
	}
	t.estTokens = prompt + completion
	if s.pricer != nil {
		if usd, ok := s.pricer.Cost(primary.Provider, primary.Model, inference.Usage{
			PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}); ok {
			t.estCost = toNano(usd)
		}
	}
	t.add(&e.counterKeys[0], e.vk.Budget, e.vk.RateLimit, now)
	if e.team != nil {
		t.add(&e.counterKeys[1], e.team.Budget, e.team.RateLimit, now)
	}
	if e.customer != nil {
		t.add(&e.counterKeys[2], e.customer.Budget, e.customer.RateLimit, now)
	}
	if t.n == 0 {
		return t, nil
	}
	refused, err := s.counters.Reserve(ctx, t.charges[:t.n])
	if err != nil {
		return nil, apierr.Internal(fmt.Errorf("governance: reserve: %w", err))
	}
	if refused >= 0 {
		return nil, t.refusal(refused, now)
	}
	return t, nil
}

// caller picks the virtual key among the presented credentials (x-gw-vk,
// then an sk-gw- x-api-key, then an sk-gw- bearer) and looks it up. A nil
// entry with a nil error is a request without a virtual key.
func (s *Service) caller(vkHeader, apiKey, bearer string, now time.Time) (*entry, *apierr.Error) {
	cred := vkHeader
	switch {
	case cred != "":
	case isVirtualKey(apiKey):
		cred = apiKey
	case isVirtualKey(bearer):
		cred = bearer
	}
	if cred == "" {
		if s.require {
			return nil, apierr.Unauthorized("virtual_key_required",
				"a virtual key is required (governance.require_virtual_key): send it as Authorization: Bearer, x-api-key or x-gw-vk")
		}
		return nil, nil
	}
	return s.lookup(cred, now)
}

// CheckCaller refuses a request whose virtual key is unknown, disabled or
// expired (or missing when required) without reserving anything; async
// submit uses it so a bad key fails at once, not when the job runs.
func (s *Service) CheckCaller(c *fiber.Ctx) *apierr.Error {
	_, aerr := s.caller(c.Get(inference.HeaderVirtualKey), c.Get("x-api-key"), bearerOf(c), s.now())
	return aerr
}

// bearerOf is the token of an Authorization: Bearer header, or "".
func bearerOf(c *fiber.Ctx) string {
	if a := c.Get(fiber.HeaderAuthorization); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// lookup finds an active, unexpired virtual key by its value.
func (s *Service) lookup(cred string, now time.Time) (*entry, *apierr.Error) {
	var h [32]byte
	s.keyHash(cred, &h)
	e := s.snap.Load().byHash[h]
	// The map finds the candidate; the comparison is constant-time anyway
	// so no timing reveals how much of a hash matched.
	if e == nil || subtle.ConstantTimeCompare(e.hash[:], h[:]) != 1 {
		return nil, apierr.Unauthorized("invalid_virtual_key", "the virtual key is not valid")
	}
	if !e.vk.IsActive {
		return nil, apierr.Unauthorized("virtual_key_disabled", "the virtual key is disabled")
	}
	if e.vk.ExpiresAt != nil && !now.Before(*e.vk.ExpiresAt) {
		return nil, apierr.Unauthorized("virtual_key_expired", "the virtual key expired at "+e.vk.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return e, nil
}

// allows checks every target (primary and fallbacks) against the key's
// provider configs.
func (e *entry) allows(targets []routing.Target) *apierr.Error {
	if e.providers == nil {
		return nil
	}
	for _, tg := range targets {
		r, ok := e.providers[tg.Provider]
		if !ok {
			return apierr.Forbidden("provider_not_allowed",
				fmt.Sprintf("the virtual key does not allow provider %q (model %q)", tg.Provider, tg.String())).WithParam("model")
		}
		if r.models != nil && !r.models[tg.Model] {
			return apierr.Forbidden("model_not_allowed",
				fmt.Sprintf("the virtual key does not allow model %q", tg.String())).WithParam("model")
		}
	}
	return nil
}

var completionFields = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

// completionEstimate is the request's completion cap, else the default.
func (s *Service) completionEstimate(body []byte) int64 {
	for _, f := range completionFields {
		if n, ok := jsonx.IntField(body, f); ok && n > 0 {
			return n
		}
	}
	return s.defTok
}

// add appends one level's charges.
func (t *ticket) add(keys *[3]string, b *Budget, r *RateLimit, now time.Time) {
	if b != nil {
		start, _ := b.ResetPeriod.window(now)
		t.push(kindBudget, counters.Charge{Key: keys[0], Window: start, Limit: toNano(b.MaxLimit), Amount: t.estCost})
	}
	if r != nil && r.RequestMaxLimit > 0 {
		start, _ := r.RequestResetPeriod.window(now)
		t.push(kindRequests, counters.Charge{Key: keys[1], Window: start, Limit: r.RequestMaxLimit, Amount: 1})
	}
	if r != nil && r.TokenMaxLimit > 0 {
		start, _ := r.TokenResetPeriod.window(now)
		t.push(kindTokens, counters.Charge{Key: keys[2], Window: start, Limit: r.TokenMaxLimit, Amount: t.estTokens})
	}
}

func (t *ticket) push(kind int8, c counters.Charge) {
	t.charges[t.n], t.kinds[t.n] = c, kind
	t.n++
}

// refusal is the 402 or 429 for the charge at index i.
func (t *ticket) refusal(i int, now time.Time) *apierr.Error {
	c := t.charges[i]
	level := c.Key[:len(c.Key)-len("/budget")]
	if t.kinds[i] != kindBudget {
		level = c.Key[:indexLastSlash(c.Key)]
	}
	level = levelName(level)
	var e *apierr.Error
	var end time.Time
	switch t.kinds[i] {
	case kindBudget:
		e = apierr.New(http.StatusPaymentRequired, apierr.TypeBudget, "budget_exceeded",
			fmt.Sprintf("the budget of %s is exhausted for this period (limit %.6g USD)", level, float64(c.Limit)/nanoUSD))
		end = t.periodEnd(i, now)
	case kindRequests:
		e = apierr.New(http.StatusTooManyRequests, apierr.TypeRateLimit, "rate_limit_exceeded",
			fmt.Sprintf("the request rate limit of %s is reached (%d per window)", level, c.Limit))
		end = t.periodEnd(i, now)
	default:
		e = apierr.New(http.StatusTooManyRequests, apierr.TypeRateLimit, "token_limit_exceeded",
			fmt.Sprintf("the token rate limit of %s is reached (%d per window; this request is estimated at %d)", level, c.Limit, c.Amount))
		end = t.periodEnd(i, now)
	}
	ms := max(end.Sub(now).Milliseconds(), 1)
	e.WithExtra(&apierr.ExtraFields{RetryAfterMS: &ms})
	e.WithHeader("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
	return e
}

// periodEnd finds the end of the window of charge i from its level's rules.
func (t *ticket) periodEnd(i int, now time.Time) time.Time {
	p := t.periodOf(i)
	_, end := p.window(now)
	return end
}

func (t *ticket) periodOf(i int) Period {
	key := t.charges[i].Key
	b, r := t.rulesOf(key[:indexLastSlash(key)])
	switch t.kinds[i] {
	case kindBudget:
		return b.ResetPeriod
	case kindRequests:
		return r.RequestResetPeriod
	}
	return r.TokenResetPeriod
}

func (t *ticket) rulesOf(level string) (*Budget, *RateLimit) {
	switch {
	case level == "vk/"+t.e.vk.ID:
		return t.e.vk.Budget, t.e.vk.RateLimit
	case t.e.team != nil && level == "team/"+t.e.team.ID:
		return t.e.team.Budget, t.e.team.RateLimit
	case t.e.customer != nil:
		return t.e.customer.Budget, t.e.customer.RateLimit
	}
	return nil, nil
}

func indexLastSlash(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return i
		}
	}
	return len(s)
}

func levelName(level string) string {
	kind, id := level[:indexFirstSlash(level)], level[indexFirstSlash(level)+1:]
	switch kind {
	case "vk":
		return "virtual key " + strconv.Quote(id)
	case "team":
		return "team " + strconv.Quote(id)
	}
	return "customer " + strconv.Quote(id)
}

func indexFirstSlash(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return i
		}
	}
	return len(s)
}

// VirtualKeyID implements inference.Ticket.
func (t *ticket) VirtualKeyID() string { return t.e.vk.ID }

// AllowsKey implements inference.Ticket.
func (t *ticket) AllowsKey(provider, keyID string) bool {
	if t.e.providers == nil {
		return true
	}
	r := t.e.providers[provider]
	return r == nil || r.keys == nil || r.keys[keyID]
}

// Settle implements inference.Ticket: the reservation is replaced by the
// real cost and tokens. A request that failed without consuming tokens
// costs nothing; its request count stays (it was made).
func (t *ticket) Settle(o *inference.Outcome) {
	if t.n == 0 {
		return
	}
	var cost, tokens int64
	if o.Err == nil || o.Usage.TotalTokens > 0 {
		tokens = o.Usage.TotalTokens
		if tokens == 0 {
			tokens = o.Usage.PromptTokens + o.Usage.CompletionTokens
		}
		if t.s.pricer != nil {
			model := o.ResolvedModel
			if model == "" {
				// "<provider>/<model>", or a bare model; Cut, unlike
				// ParseModel, allocates no error for the latter.
				model = o.Model
				if _, m, ok := strings.Cut(model, "/"); ok && m != "" {
					model = m
				}
			}
			if usd, ok := t.s.pricer.Cost(o.Provider, model, o.Usage); ok {
				cost = toNano(usd)
			}
		}
	}
	ctx := context.Background()
	for i := 0; i < t.n; i++ {
		c := &t.charges[i]
		var delta int64
		switch t.kinds[i] {
		case kindBudget:
			delta = cost - c.Amount
		case kindTokens:
			delta = tokens - c.Amount
		default:
			continue
		}
		if err := t.s.counters.Adjust(ctx, c.Key, c.Window, delta); err != nil {
			t.s.log.Error("governance settlement failed", "counter", c.Key, "error", err)
		}
	}
}
