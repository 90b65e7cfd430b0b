package governance

import (
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

type vkInput struct {
	Name            string           `json:"name"`
	Description     string           `json:"description"`
	IsActive        *bool            `json:"is_active"`
	ExpiresAt       *time.Time       `json:"expires_at"`
	TeamID          string           `json:"team_id"`
	CustomerID      string           `json:"customer_id"`
	ProviderConfigs []ProviderConfig `json:"provider_configs"`
	MCPConfigs      []MCPConfig      `json:"mcp_configs"`
	Budget          *Budget          `json:"budget"`
	RateLimit       *RateLimit       `json:"rate_limit"`
}

type vkUpdate struct {
	Name            opt[string]           `json:"name"`
	Description     opt[string]           `json:"description"`
	IsActive        opt[bool]             `json:"is_active"`
	ExpiresAt       opt[time.Time]        `json:"expires_at"`
	TeamID          opt[string]           `json:"team_id"`
	CustomerID      opt[string]           `json:"customer_id"`
	ProviderConfigs opt[[]ProviderConfig] `json:"provider_configs"`
	MCPConfigs      opt[[]MCPConfig]      `json:"mcp_configs"`
	Budget          opt[Budget]           `json:"budget"`
	RateLimit       opt[RateLimit]        `json:"rate_limit"`
}

// createdKey is the create answer: the key, with its value shown this once.
type createdKey struct {
	VirtualKey
	Value string `json:"value"`
}

// checkParent validates the budget-hierarchy parent of a virtual key.
func checkParent(tx store.Tx, v *VirtualKey) error {
	if v.TeamID != "" && v.CustomerID != "" {
		return apierr.BadRequest("invalid_field", "customer_id",
			"customer_id: a virtual key has one budget parent: set team_id or customer_id, not both")
	}
	if v.TeamID != "" {
		if _, err := tx.Get(nsTeams, v.TeamID); err != nil {
			if err == store.ErrNotFound {
				return apierr.BadRequest("unknown_team", "team_id", "team_id: team "+v.TeamID+" does not exist")
			}
			return err
		}
	}
	if v.CustomerID != "" {
		return requireCustomer(tx, v.CustomerID, "customer_id")
	}
	return nil
}

func (s *Service) createVirtualKey(c *fiber.Ctx) error {
	var in vkInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := firstErr(validName("name", in.Name), validateProviderConfigs(in.ProviderConfigs),
		in.Budget.validate("budget"), in.RateLimit.validate("rate_limit")); e != nil {
		return e
	}
	if e := s.resolveMCPConfigs(c.UserContext(), in.MCPConfigs); e != nil {
		return e
	}
	value, err := newKeyValue()
	if err != nil {
		return apierr.Internal(err)
	}
	now := s.now().UTC()
	v := VirtualKey{ID: uuid.Must(uuid.NewV7()).String(), Name: strings.TrimSpace(in.Name), Description: in.Description,
		IsActive: in.IsActive == nil || *in.IsActive, ExpiresAt: in.ExpiresAt, TeamID: in.TeamID, CustomerID: in.CustomerID,
		ProviderConfigs: in.ProviderConfigs, MCPConfigs: in.MCPConfigs, Budget: in.Budget, RateLimit: in.RateLimit, KeyPrefix: maskKey(value),
		CreatedAt: now, UpdatedAt: now, Hash: s.keyHashHex(value)}
	err = s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if err := checkParent(tx, &v); err != nil {
			return err
		}
		if err := tx.Put(nsKeyHashes, v.Hash, []byte(v.ID)); err != nil {
			return err
		}
		return store.PutJSON(tx, nsVirtualKeys, v.ID, v)
	})
	if err != nil {
		return storeErr(err, "virtual key", v.ID)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	return c.Status(http.StatusCreated).JSON(fiber.Map{"virtual_key": createdKey{VirtualKey: v.public(), Value: value}})
}

func (s *Service) listVirtualKeys(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	team, customer := c.Query("team_id"), c.Query("customer_id")
	var all []VirtualKey
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		return scanAll[VirtualKey](tx, nsVirtualKeys, func(v VirtualKey) {
			if (team == "" || v.TeamID == team) && (customer == "" || v.CustomerID == customer) {
				all = append(all, v.public())
			}
		})
	})
	if err != nil {
		return apierr.Internal(err)
	}
	page := listing.Window(all, limit, offset)
	return c.JSON(fiber.Map{"virtual_keys": page, "count": len(page), "total_count": len(all), "limit": limit, "offset": offset})
}

func (s *Service) getVirtualKey(c *fiber.Ctx) error {
	id := c.Params("id")
	var v VirtualKey
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		v, err = store.GetJSON[VirtualKey](tx, nsVirtualKeys, id)
		return err
	})
	if err != nil {
		return storeErr(err, "virtual key", id)
	}
	return c.JSON(fiber.Map{"virtual_key": v.public()})
}

func (s *Service) updateVirtualKey(c *fiber.Ctx) error {
	id := c.Params("id")
	var in vkUpdate
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	// Resolved before the transaction: it reads host/mcp's clients.
	mcs := deref(in.MCPConfigs.V)
	if in.MCPConfigs.Set {
		if e := s.resolveMCPConfigs(c.UserContext(), mcs); e != nil {
			return e
		}
	}
	var v VirtualKey
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		var err error
		if v, err = store.GetJSON[VirtualKey](tx, nsVirtualKeys, id); err != nil {
			return err
		}
		if in.Name.Set {
			if e := validName("name", deref(in.Name.V)); e != nil {
				return e
			}
			v.Name = strings.TrimSpace(*in.Name.V)
		}
		if in.Description.Set {
			v.Description = deref(in.Description.V)
		}
		if in.IsActive.Set {
			if in.IsActive.V == nil {
				return fieldErr("is_active", "must be true or false")
			}
			v.IsActive = *in.IsActive.V
		}
		if in.ExpiresAt.Set {
			v.ExpiresAt = in.ExpiresAt.V
		}
		if in.TeamID.Set {
			v.TeamID = deref(in.TeamID.V)
		}
		if in.CustomerID.Set {
			v.CustomerID = deref(in.CustomerID.V)
		}
		if in.ProviderConfigs.Set {
			pcs := deref(in.ProviderConfigs.V)
			if e := validateProviderConfigs(pcs); e != nil {
				return e
			}
			v.ProviderConfigs = pcs
		}
		if in.MCPConfigs.Set {
			v.MCPConfigs = mcs
		}
		if in.Budget.Set {
			if e := in.Budget.V.validate("budget"); e != nil {
				return e
			}
			v.Budget = in.Budget.V
		}
		if in.RateLimit.Set {
			if e := in.RateLimit.V.validate("rate_limit"); e != nil {
				return e
			}
			v.RateLimit = in.RateLimit.V
		}
		if err := checkParent(tx, &v); err != nil {
			return err
		}
		v.UpdatedAt = s.now().UTC()
		return store.PutJSON(tx, nsVirtualKeys, id, v)
	})
	if err != nil {
		return storeErr(err, "virtual key", id)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"virtual_key": v.public()})
}

func (s *Service) deleteVirtualKey(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		v, err := store.GetJSON[VirtualKey](tx, nsVirtualKeys, id)
		if err != nil {
			return err
		}
		if err := tx.Delete(nsKeyHashes, v.Hash); err != nil {
			return err
		}
		if s.refs != nil {
			if err := s.refs.VirtualKeyDeleted(tx, id); err != nil {
				return err
			}
		}
		return tx.Delete(nsVirtualKeys, id)
	})
	if err != nil {
		return storeErr(err, "virtual key", id)
	}
	_ = s.counters.Delete(c.UserContext(), "vk/"+id+"/")
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"status": "success", "message": "virtual key deleted"})
}
