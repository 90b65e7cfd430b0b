package governance

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/wasmgate/gateway/host/apierr"
)

// budgetQuota is one level's budget state.
type budgetQuota struct {
	MaxLimit     float64   `json:"max_limit"`
	ResetPeriod  Period    `json:"reset_period"`
	CurrentUsage float64   `json:"current_usage"`
	Remaining    float64   `json:"remaining"`
	ResetsAt     time.Time `json:"resets_at"`
}

// limitQuota is one rate limit's state.
type limitQuota struct {
	MaxLimit    int64     `json:"max_limit"`
	ResetPeriod Period    `json:"reset_period"`
	Used        int64     `json:"used"`
	Remaining   int64     `json:"remaining"`
	ResetsAt    time.Time `json:"resets_at"`
}

type levelQuota struct {
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Budget   *budgetQuota `json:"budget,omitempty"`
	Requests *limitQuota  `json:"request_limit,omitempty"`
	Tokens   *limitQuota  `json:"token_limit,omitempty"`
}

// quota is GET /api/governance/virtual-keys/quota: virtual keys only.
func (s *Service) quota(c *fiber.Ctx) error {
	cred := c.Get("x-gw-vk")
	if cred == "" {
		cred = c.Get("x-api-key")
	}
	if cred == "" {
		if a := c.Get(fiber.HeaderAuthorization); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			cred = strings.TrimSpace(a[7:])
		}
	}
	if !isVirtualKey(cred) {
		return apierr.Unauthorized("virtual_key_required",
			"this endpoint accepts only a virtual key (sk-gw-...) as Authorization: Bearer, x-api-key or x-gw-vk")
	}
	now := s.now()
	e, aerr := s.lookup(cred, now)
	if aerr != nil {
		return aerr
	}
	ctx := c.UserContext()
	out := fiber.Map{"virtual_key": s.level(ctx, "vk/"+e.vk.ID, e.vk.ID, e.vk.Name, e.vk.Budget, e.vk.RateLimit, now)}
	if e.team != nil {
		out["team"] = s.level(ctx, "team/"+e.team.ID, e.team.ID, e.team.Name, e.team.Budget, e.team.RateLimit, now)
	}
	if e.customer != nil {
		out["customer"] = s.level(ctx, "customer/"+e.customer.ID, e.customer.ID, e.customer.Name, e.customer.Budget, e.customer.RateLimit, now)
	}
	return c.JSON(out)
}

func (s *Service) level(ctx context.Context, prefix, id, name string, b *Budget, r *RateLimit, now time.Time) levelQuota {
	q := levelQuota{ID: id, Name: name}
	if b != nil {
		start, end := b.ResetPeriod.window(now)
		used, _ := s.counters.Get(ctx, prefix+"/budget", start)
		usage := float64(used) / nanoUSD
		q.Budget = &budgetQuota{MaxLimit: b.MaxLimit, ResetPeriod: b.ResetPeriod, CurrentUsage: usage,
			Remaining: max(b.MaxLimit-usage, 0), ResetsAt: end}
	}
	lim := func(key string, max int64, p Period) *limitQuota {
		start, end := p.window(now)
		used, _ := s.counters.Get(ctx, key, start)
		return &limitQuota{MaxLimit: max, ResetPeriod: p, Used: used, Remaining: maxInt(max-used, 0), ResetsAt: end}
	}
	if r != nil && r.RequestMaxLimit > 0 {
		q.Requests = lim(prefix+"/requests", r.RequestMaxLimit, r.RequestResetPeriod)
	}
	if r != nil && r.TokenMaxLimit > 0 {
		q.Tokens = lim(prefix+"/tokens", r.TokenMaxLimit, r.TokenResetPeriod)
	}
	return q
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}
