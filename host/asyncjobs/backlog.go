package asyncjobs

import "sync"

// backlog tracks the jobs accepted and not finished (queued or running),
// in total and per submitting credential, so that neither the gateway as a
// whole (async.max_backlog) nor one caller (async.max_backlog_per_credential)
// can pile up jobs without bound: each holds its request body in the store
// until it runs.
//
// A job holds its place from the submit (or its recovery after a restart)
// until a worker is done with it. The credential is the job's
// CredentialHash, never the credential itself.
type backlog struct {
	mu     sync.Mutex
	total  int
	byCred map[string]int
	credOf map[string]string // job id -> credential hash
}

func newBacklog() *backlog {
	return &backlog{byCred: map[string]int{}, credOf: map[string]string{}}
}

// refusal says which cap a reservation hit.
type refusal int

const (
	admitted refusal = iota
	gatewayFull
	credentialFull
)

// reserve takes a place for job id submitted under cred unless the
// gateway's cap (limit) or the credential's (perCred, 0 = none) is reached.
func (b *backlog) reserve(id, cred string, limit, perCred int) refusal {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= limit {
		return gatewayFull
	}
	if perCred > 0 && b.byCred[cred] >= perCred {
		return credentialFull
	}
	b.hold(id, cred)
	return admitted
}

// resume takes a place for a job found unfinished at start, whatever the
// caps: it was acknowledged, so it runs. It reports false when the job
// already holds one (submitted before the recovery scan saw it).
func (b *backlog) resume(id, cred string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.credOf[id]; ok {
		return false
	}
	b.hold(id, cred)
	return true
}

func (b *backlog) hold(id, cred string) {
	b.total++
	b.byCred[cred]++
	b.credOf[id] = cred
}

// release frees the place of job id; a job without one is ignored.
func (b *backlog) release(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cred, ok := b.credOf[id]
	if !ok {
		return
	}
	delete(b.credOf, id)
	b.total--
	if b.byCred[cred]--; b.byCred[cred] <= 0 {
		delete(b.byCred, cred)
	}
}

// size is the number of unfinished jobs.
func (b *backlog) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}
