package badgerstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wasmgate/gateway/store"
	"github.com/wasmgate/gateway/store/badgerstore"
)

func open(t *testing.T, dir string) *badgerstore.DB {
	t.Helper()
	db, err := badgerstore.Open(badgerstore.Options{Dir: dir, SyncWrites: true})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestScanOrderPrefixCursorReverse(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	err := db.Update(ctx, func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			if err := tx.Put("a", fmt.Sprintf("k%d", i), []byte{byte(i)}); err != nil {
				return err
			}
		}
		// Neighbouring namespaces and prefixes must not leak into scans.
		if err := tx.Put("ab", "k9", []byte{9}); err != nil {
			return err
		}
		return tx.Put("a", "x1", []byte{42})
	})
	if err != nil {
		t.Fatal(err)
	}
	collect := func(opts store.ScanOptions) []string {
		var keys []string
		_ = db.View(ctx, func(tx store.Tx) error {
			return tx.Scan("a", opts, func(k string, _ []byte) error { keys = append(keys, k); return nil })
		})
		return keys
	}
	cases := []struct {
		opts store.ScanOptions
		want string
	}{
		{store.ScanOptions{}, "[k0 k1 k2 k3 k4 x1]"},
		{store.ScanOptions{Prefix: "k"}, "[k0 k1 k2 k3 k4]"},
		{store.ScanOptions{Prefix: "k", After: "k2"}, "[k3 k4]"},
		{store.ScanOptions{Prefix: "k", Reverse: true}, "[k4 k3 k2 k1 k0]"},
		{store.ScanOptions{Prefix: "k", Reverse: true, After: "k3"}, "[k2 k1 k0]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(collect(c.opts)); got != c.want {
			t.Errorf("scan %+v = %s, want %s", c.opts, got, c.want)
		}
	}
	var n int
	_ = db.View(ctx, func(tx store.Tx) error {
		return tx.Scan("a", store.ScanOptions{}, func(string, []byte) error {
			n++
			if n == 2 {
				return store.ErrStopScan
			}
			return nil
		})
	})
	if n != 2 {
		t.Fatalf("ErrStopScan: visited %d", n)
	}
	err = db.View(ctx, func(tx store.Tx) error { _, err := tx.Get("a", "missing"); return err })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

func TestSealedEncryptsAtRest(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const secret = "sk-live-THIS-MUST-NOT-BE-ON-DISK-1234"
	key := "an operator passphrase, long enough"

	db := open(t, dir)
	s, err := store.OpenSealed(ctx, db, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx store.Tx) error { return tx.Put("keys", "k1", []byte(secret)) }); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if grepDir(t, dir, secret) {
		t.Fatal("secret found in clear in the Badger files")
	}

	// Missing key: refuse. Wrong key: refuse. Right key: read back.
	db = open(t, dir)
	if _, err := store.OpenSealed(ctx, db, "", nil); !errors.Is(err, store.ErrEncryptionKeyMissing) {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := store.OpenSealed(ctx, db, "a different passphrase entirely", nil); !errors.Is(err, store.ErrEncryptionKeyWrong) {
		t.Fatalf("wrong key: %v", err)
	}
	s, err = store.OpenSealed(ctx, db, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	_ = s.View(ctx, func(tx store.Tx) error { got, err = tx.Get("keys", "k1"); return err })
	if string(got) != secret {
		t.Fatalf("read back %q", got)
	}
	_ = s.Close()
}

func TestSealedMigratesPlainData(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	const secret = "plain-secret-written-before-a-key-existed"
	db := open(t, dir)
	s, err := store.OpenSealed(ctx, db, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Update(ctx, func(tx store.Tx) error { return tx.Put("keys", "k", []byte(secret)) })
	_ = s.Close()

	// 32 random bytes as hex is accepted as a raw key.
	hexKey := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	db = open(t, dir)
	s, err = store.OpenSealed(ctx, db, hexKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	_ = s.View(ctx, func(tx store.Tx) error { got, err = tx.Get("keys", "k"); return err })
	if string(got) != secret {
		t.Fatalf("after migration read %q", got)
	}
	_ = s.Close()
	db = open(t, dir)
	defer db.Close()
	if _, err := store.OpenSealed(ctx, db, "", nil); !errors.Is(err, store.ErrEncryptionKeyMissing) {
		t.Fatalf("after migration, no key must be refused: %v", err)
	}
}

func grepDir(t *testing.T, dir, needle string) bool {
	t.Helper()
	found := false
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(p)
		if bytes.Contains(b, []byte(needle)) {
			found = true
		}
		return nil
	})
	return found
}
