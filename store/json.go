package store

import (
	"encoding/json"
	"fmt"
)

// GetJSON reads ns/key and decodes it into a new T.
func GetJSON[T any](tx Tx, ns, key string) (T, error) {
	var v T
	raw, err := tx.Get(ns, key)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("store: decode %s/%s: %w", ns, key, err)
	}
	return v, nil
}

// PutJSON encodes v and stores it under ns/key.
func PutJSON(tx Tx, ns, key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%s: %w", ns, key, err)
	}
	return tx.Put(ns, key, raw)
}

// ListJSON decodes every record of ns (optionally under prefix) in key order.
func ListJSON[T any](tx Tx, ns string, opts ScanOptions) ([]T, error) {
	var out []T
	err := tx.Scan(ns, opts, func(key string, value []byte) error {
		var v T
		if err := json.Unmarshal(value, &v); err != nil {
			return fmt.Errorf("store: decode %s/%s: %w", ns, key, err)
		}
		out = append(out, v)
		return nil
	})
	return out, err
}
