// Package notify delivers dashboard notifications over the management
// WebSocket (/ws). Capabilities publish events; every connected, authorised
// dashboard receives those whose target roles it holds.
package notify

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/gofiber/contrib/websocket"
	"github.com/gofiber/fiber/v2"
)

// Event is one notification.
type Event struct {
	Type string `json:"type"`
	// Roles limits delivery to subscribers holding one of them; empty means all.
	Roles     []string  `json:"roles,omitempty"`
	Data      any       `json:"data,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Hub fans events out to subscribers. A slow subscriber loses events
// rather than blocking publishers.
type Hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

type subscriber struct {
	roles map[string]bool
	all   bool
	ch    chan []byte
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[*subscriber]struct{}{}} }

// Publish sends ev to every matching subscriber without blocking.
func (h *Hub) Publish(ev Event) {
	if ev.CreatedAt.IsZero() {
		ev.CreatedAt = time.Now().UTC()
	}
	raw, err := json.Marshal(ev)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if !s.wants(ev.Roles) {
			continue
		}
		select {
		case s.ch <- raw:
		default:
		}
	}
}

func (s *subscriber) wants(roles []string) bool {
	if len(roles) == 0 || s.all {
		return true
	}
	for _, r := range roles {
		if s.roles[r] {
			return true
		}
	}
	return false
}

// Subscribers counts connected dashboards.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Handler upgrades an already-authenticated request to a WebSocket and
// streams events. rolesOf returns the caller's roles (nil with all=true for
// admins).
func (h *Hub) Handler(rolesOf func(c *fiber.Ctx) (roles []string, all bool)) fiber.Handler {
	upgrade := websocket.New(func(conn *websocket.Conn) {
		roles, _ := conn.Locals("notify.roles").([]string)
		all, _ := conn.Locals("notify.all").(bool)
		s := &subscriber{roles: map[string]bool{}, all: all, ch: make(chan []byte, 64)}
		for _, r := range roles {
			s.roles[r] = true
		}
		h.mu.Lock()
		h.subs[s] = struct{}{}
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.subs, s)
			h.mu.Unlock()
		}()
		hello, _ := json.Marshal(Event{Type: "connected", CreatedAt: time.Now().UTC()})
		if conn.WriteMessage(websocket.TextMessage, hello) != nil {
			return
		}
		// The reader notices the client going away; pings keep proxies open.
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			for {
				if _, _, err := conn.ReadMessage(); err != nil {
					return
				}
			}
		}()
		ping := time.NewTicker(30 * time.Second)
		defer ping.Stop()
		for {
			select {
			case <-closed:
				return
			case msg := <-s.ch:
				if conn.WriteMessage(websocket.TextMessage, msg) != nil {
					return
				}
			case <-ping.C:
				if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second)) != nil {
					return
				}
			}
		}
	})
	return func(c *fiber.Ctx) error {
		if !websocket.IsWebSocketUpgrade(c) {
			return fiber.NewError(fiber.StatusUpgradeRequired, "this endpoint speaks WebSocket only")
		}
		roles, all := rolesOf(c)
		c.Locals("notify.roles", roles)
		c.Locals("notify.all", all)
		return upgrade(c)
	}
}
