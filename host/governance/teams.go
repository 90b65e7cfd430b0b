package governance

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"

	"github.com/wasmgate/gateway/host/apierr"
	"github.com/wasmgate/gateway/host/auth"
	"github.com/wasmgate/gateway/host/listing"
	"github.com/wasmgate/gateway/store"
)

type teamInput struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// CustomerID is the budget-hierarchy parent at creation.
	CustomerID string     `json:"customer_id"`
	Budget     *Budget    `json:"budget"`
	RateLimit  *RateLimit `json:"rate_limit"`
}

// teamUpdate is the spec's team update (name, customer_id, customer_ids:
// the many-to-many association) plus the governance settings. The budget
// parent changes only through budget_customer_id, never through customer_id.
type teamUpdate struct {
	Name             opt[string]    `json:"name"`
	CustomerID       opt[string]    `json:"customer_id"`
	CustomerIDs      opt[[]string]  `json:"customer_ids"`
	Description      opt[string]    `json:"description"`
	Budget           opt[Budget]    `json:"budget"`
	RateLimit        opt[RateLimit] `json:"rate_limit"`
	BudgetCustomerID opt[string]    `json:"budget_customer_id"`
}

// teamUpdateResponse is the spec's Team update response, with the team.
type teamUpdateResponse struct {
	ID                  string   `json:"id"`
	Name                string   `json:"name"`
	AttachedCustomerIDs []string `json:"attached_customer_ids,omitempty"`
	Warning             string   `json:"warning,omitempty"`
	Team                Team     `json:"team"`
}

func teamCustomerKey(team, customer string) string { return team + "/" + customer }

// attached lists the customers associated with team.
func attached(tx store.Tx, team string) ([]string, error) {
	out := []string{}
	err := tx.Scan(nsTeamCustomers, store.ScanOptions{Prefix: team + "/"}, func(k string, _ []byte) error {
		out = append(out, strings.TrimPrefix(k, team+"/"))
		return nil
	})
	sort.Strings(out)
	return out, err
}

func getTeam(tx store.Tx, id string) (Team, error) {
	t, err := store.GetJSON[Team](tx, nsTeams, id)
	if err != nil {
		return t, err
	}
	t.CustomerIDs, err = attached(tx, id)
	return t, err
}

func requireCustomer(tx store.Tx, id, field string) error {
	if _, err := tx.Get(nsCustomers, id); err != nil {
		if err == store.ErrNotFound {
			return apierr.BadRequest("unknown_customer", field, fmt.Sprintf("%s: customer %q does not exist", field, id))
		}
		return err
	}
	return nil
}

func (s *Service) createTeam(c *fiber.Ctx) error {
	var in teamInput
	if e := apierr.DecodeJSON(c.Body(), &in); e != nil {
		return e
	}
	if e := firstErr(validName("name", in.Name), in.Budget.validate("budget"), in.RateLimit.validate("rate_limit")); e != nil {
		return e
	}
	now := s.now().UTC()
	t := Team{ID: uuid.Must(uuid.NewV7()).String(), Name: strings.TrimSpace(in.Name), Description: in.Description,
		CustomerID: in.CustomerID, Budget: in.Budget, RateLimit: in.RateLimit, CreatedAt: now, UpdatedAt: now}
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if t.CustomerID != "" {
			if err := requireCustomer(tx, t.CustomerID, "customer_id"); err != nil {
				return err
			}
		}
		return store.PutJSON(tx, nsTeams, t.ID, t)
	})
	if err != nil {
		return storeErr(err, "team", t.ID)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	t.CustomerIDs = []string{}
	return c.Status(http.StatusCreated).JSON(fiber.Map{"team": t})
}

func (s *Service) listTeams(c *fiber.Ctx) error {
	limit, offset, e := listing.Page(c, listing.MaxLimit)
	if e != nil {
		return e
	}
	customer := c.Query("customer_id")
	var all []Team
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		ts, err := store.ListJSON[Team](tx, nsTeams, store.ScanOptions{})
		if err != nil {
			return err
		}
		for _, t := range ts {
			if t.CustomerIDs, err = attached(tx, t.ID); err != nil {
				return err
			}
			if customer == "" || t.CustomerID == customer || contains(t.CustomerIDs, customer) {
				all = append(all, t)
			}
		}
		return nil
	})
	if err != nil {
		return apierr.Internal(err)
	}
	page := listing.Window(all, limit, offset)
	return c.JSON(fiber.Map{"teams": page, "count": len(page), "total_count": len(all), "limit": limit, "offset": offset})
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func (s *Service) getTeamHandler(c *fiber.Ctx) error {
	id := c.Params("id")
	var t Team
	err := s.st.View(c.UserContext(), func(tx store.Tx) error {
		var err error
		t, err = getTeam(tx, id)
		return err
	})
	if err != nil {
		return storeErr(err, "team", id)
	}
	return c.JSON(fiber.Map{"team": t})
}

// updateTeam is the spec's team update. Its five rules: a different name is
// a 400; customer_id and customer_ids are merged and attached additively
// (re-sending one is a no-op); that association is not the budget parent;
// attached_customer_ids answers only when one of them was sent; warning
// appears only when the attachment persisted but the cache refresh failed.
// Only a management API key may call it.
func (s *Service) updateTeam(c *fiber.Ctx) error {
	if p := auth.FromCtx(c); p == nil || p.Kind != auth.KindAPIKey {
		return apierr.Unauthorized("management_api_key_required",
			"team update accepts only a management API key as Authorization: Bearer (sessions, Basic credentials and x-api-key are refused)")
	}
	out, err := s.associate(c.UserContext(), c.Params("id"), c.Body())
	if err != nil {
		return err
	}
	return c.JSON(out)
}

// associate applies a team update body to team id.
func (s *Service) associate(ctx context.Context, id string, body []byte) (*teamUpdateResponse, error) {
	var in teamUpdate
	if e := apierr.DecodeJSON(body, &in); e != nil {
		return nil, e
	}
	var want []string
	if in.CustomerID.Set && deref(in.CustomerID.V) != "" {
		want = append(want, *in.CustomerID.V)
	}
	if in.CustomerIDs.Set {
		for i, cid := range deref(in.CustomerIDs.V) {
			if strings.TrimSpace(cid) == "" {
				return nil, fieldErr(fmt.Sprintf("customer_ids[%d]", i), "must not be empty")
			}
			want = append(want, cid)
		}
	}
	associating := in.CustomerID.Set || in.CustomerIDs.Set
	var t Team
	err := s.st.Update(ctx, func(tx store.Tx) error {
		var err error
		if t, err = store.GetJSON[Team](tx, nsTeams, id); err != nil {
			return err
		}
		if in.Name.Set && deref(in.Name.V) != t.Name {
			return apierr.BadRequest("immutable_field", "name",
				fmt.Sprintf("name: a team's name cannot change (current %q)", t.Name))
		}
		for _, cid := range want {
			field := "customer_ids"
			if in.CustomerID.Set && cid == deref(in.CustomerID.V) {
				field = "customer_id"
			}
			if err := requireCustomer(tx, cid, field); err != nil {
				return err
			}
			if err := tx.Put(nsTeamCustomers, teamCustomerKey(id, cid), nil); err != nil {
				return err
			}
		}
		if in.Description.Set {
			t.Description = deref(in.Description.V)
		}
		if in.Budget.Set {
			if e := in.Budget.V.validate("budget"); e != nil {
				return e
			}
			t.Budget = in.Budget.V
		}
		if in.RateLimit.Set {
			if e := in.RateLimit.V.validate("rate_limit"); e != nil {
				return e
			}
			t.RateLimit = in.RateLimit.V
		}
		if in.BudgetCustomerID.Set {
			parent := deref(in.BudgetCustomerID.V)
			if parent != "" {
				if err := requireCustomer(tx, parent, "budget_customer_id"); err != nil {
					return err
				}
			}
			t.CustomerID = parent
		}
		t.UpdatedAt = s.now().UTC()
		if err := store.PutJSON(tx, nsTeams, id, t); err != nil {
			return err
		}
		t.CustomerIDs, err = attached(tx, id)
		return err
	})
	if err != nil {
		return nil, storeErr(err, "team", id)
	}
	out := &teamUpdateResponse{ID: t.ID, Name: t.Name, Team: t}
	if associating {
		out.AttachedCustomerIDs = t.CustomerIDs
	}
	if rerr := s.refreshAfterWrite(ctx); rerr != nil && associating {
		out.Warning = "the customer association was saved, but refreshing the cached team scope failed; " +
			"derived scope may lag until the next reload"
	}
	return out, nil
}

// detachCustomer is DELETE /api/teams/{id}/customers/{customerId}.
func (s *Service) detachCustomer(c *fiber.Ctx) error {
	id, cid := c.Params("id"), c.Params("customerId")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if _, err := tx.Get(nsTeams, id); err != nil {
			return err
		}
		if _, err := tx.Get(nsTeamCustomers, teamCustomerKey(id, cid)); err != nil {
			if err == store.ErrNotFound {
				return apierr.New(http.StatusNotFound, apierr.TypeNotFound, "customer_not_attached",
					fmt.Sprintf("customer %q is not attached to team %q", cid, id))
			}
			return err
		}
		return tx.Delete(nsTeamCustomers, teamCustomerKey(id, cid))
	})
	if err != nil {
		return storeErr(err, "team", id)
	}
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"status": "success", "message": "customer detached from team"})
}

func (s *Service) deleteTeam(c *fiber.Ctx) error {
	id := c.Params("id")
	err := s.st.Update(c.UserContext(), func(tx store.Tx) error {
		if _, err := tx.Get(nsTeams, id); err != nil {
			return err
		}
		var users []string
		if err := scanAll[VirtualKey](tx, nsVirtualKeys, func(v VirtualKey) {
			if v.TeamID == id {
				users = append(users, v.ID)
			}
		}); err != nil {
			return err
		}
		if len(users) > 0 {
			return apierr.Conflict("team_in_use", "team "+id+" is the budget parent of virtual keys "+strings.Join(users, ", "))
		}
		cs, err := attached(tx, id)
		if err != nil {
			return err
		}
		for _, cid := range cs {
			if err := tx.Delete(nsTeamCustomers, teamCustomerKey(id, cid)); err != nil {
				return err
			}
		}
		if s.refs != nil {
			if err := s.refs.TeamDeleted(tx, id); err != nil {
				return err
			}
		}
		return tx.Delete(nsTeams, id)
	})
	if err != nil {
		return storeErr(err, "team", id)
	}
	_ = s.counters.Delete(c.UserContext(), "team/"+id+"/")
	_ = s.refreshAfterWrite(c.UserContext())
	return c.JSON(fiber.Map{"status": "success", "message": "team deleted"})
}
