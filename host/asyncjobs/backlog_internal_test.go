package asyncjobs

import "testing"

func TestBacklogCounts(t *testing.T) {
	b := newBacklog()
	if got := b.reserve("j1", "a", 3, 2); got != admitted {
		t.Fatalf("first job: %v", got)
	}
	if got := b.reserve("j2", "a", 3, 2); got != admitted {
		t.Fatalf("second job: %v", got)
	}
	if got := b.reserve("j3", "a", 3, 2); got != credentialFull {
		t.Fatalf("third job of one credential: %v, want credentialFull", got)
	}
	if got := b.reserve("j4", "b", 3, 2); got != admitted {
		t.Fatalf("another credential: %v", got)
	}
	if got := b.reserve("j5", "c", 3, 0); got != gatewayFull {
		t.Fatalf("over the gateway cap: %v, want gatewayFull", got)
	}
	// Recovery ignores the caps but never counts a job twice.
	if !b.resume("j6", "a") || b.resume("j1", "a") {
		t.Fatal("resume: a new job must be counted, a held one must not")
	}
	if b.size() != 4 {
		t.Fatalf("size %d, want 4", b.size())
	}
	for _, id := range []string{"j1", "j2", "j4", "j6", "j6", "unknown"} {
		b.release(id)
	}
	if b.size() != 0 || len(b.byCred) != 0 || len(b.credOf) != 0 {
		t.Fatalf("after releasing everything: size %d, %v, %v", b.size(), b.byCred, b.credOf)
	}
}
