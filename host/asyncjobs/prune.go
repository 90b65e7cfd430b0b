package asyncjobs

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/wasmgate/gateway/store"
)

// pruneLoop runs Prune every PruneInterval until Close.
func (s *Service) pruneLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.o.PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			if _, err := s.Prune(s.ctx); err != nil && s.ctx.Err() == nil {
				s.log.Warn("async jobs: prune failed", "error", err)
			}
		}
	}
}

// PruneStats counts what one Prune pass did.
type PruneStats struct {
	// Results is how many expired jobs lost their result and became tombstones.
	Results int
	// Tombstones is how many tombstones were deleted.
	Tombstones int
}

// Prune walks the expiry queue up to now in bounded batches (one
// transaction each, so a large backlog never makes one huge transaction):
// a job whose result expired more than PruneGrace ago keeps only a
// tombstone, which answers 410 until TombstoneTTL after the expiry and is
// then deleted, after which the id answers 404. It is safe to run at any
// time; the background loop calls it every PruneInterval.
func (s *Service) Prune(ctx context.Context) (PruneStats, error) {
	var total PruneStats
	for ctx.Err() == nil {
		now := s.now()
		var batch PruneStats
		n := 0
		err := s.st.Update(ctx, func(tx store.Tx) error {
			batch, n = PruneStats{}, 0
			type due struct{ key, phase string }
			var items []due
			err := tx.Scan(nsExpiry, store.ScanOptions{}, func(key string, v []byte) error {
				at, _, ok := parseExpiryKey(key)
				if ok && at.After(now) {
					return store.ErrStopScan
				}
				items = append(items, due{key, string(v)})
				if len(items) >= pruneBatch {
					return store.ErrStopScan
				}
				return nil
			})
			if err != nil {
				return err
			}
			for _, it := range items {
				n++
				if err := s.pruneOne(tx, it.key, it.phase, &batch); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total.Results += batch.Results
		total.Tombstones += batch.Tombstones
		if n < pruneBatch {
			break
		}
		s.log.Info("async jobs: pruning in progress", "results", total.Results, "tombstones", total.Tombstones)
	}
	if total.Results+total.Tombstones > 0 {
		s.log.Info("async jobs: pruned expired jobs", "results", total.Results, "tombstones", total.Tombstones)
	}
	return total, ctx.Err()
}

func (s *Service) pruneOne(tx store.Tx, key, phase string, st *PruneStats) error {
	if err := tx.Delete(nsExpiry, key); err != nil {
		return err
	}
	_, id, ok := parseExpiryKey(key)
	if !ok {
		return nil // malformed entry: dropping it is all there is to do
	}
	job, err := store.GetJSON[Job](tx, nsJobs, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if phase == phaseTombstone || job.Tombstone {
		st.Tombstones++
		return tx.Delete(nsJobs, id)
	}
	// Keep what identifies and authorises the job, drop the result.
	tomb := Job{
		ID: job.ID, Segment: job.Segment, RequestType: job.RequestType, Status: job.Status,
		CredentialHash: job.CredentialHash, Attempts: job.Attempts, CreatedAt: job.CreatedAt,
		CompletedAt: job.CompletedAt, ResultExpiresAt: job.ResultExpiresAt, StatusCode: job.StatusCode,
		Tombstone: true,
	}
	if err := store.PutJSON(tx, nsJobs, id, tomb); err != nil {
		return err
	}
	st.Results++
	deleteAt := s.now()
	if job.ResultExpiresAt != nil {
		deleteAt = job.ResultExpiresAt.Add(s.o.TombstoneTTL)
	}
	return tx.Put(nsExpiry, expiryKey(deleteAt, id), []byte(phaseTombstone))
}

func parseExpiryKey(k string) (time.Time, string, bool) {
	ts, id, ok := strings.Cut(k, "/")
	if !ok || len(ts) != 20 {
		return time.Time{}, "", false
	}
	var n int64
	for _, c := range ts {
		if c < '0' || c > '9' {
			return time.Time{}, "", false
		}
		n = n*10 + int64(c-'0')
	}
	return time.Unix(0, n), id, true
}
