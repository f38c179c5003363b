package ledger

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxHardwareText bounds a record's host and accelerator names.
const MaxHardwareText = 200

// ReplicateKey is the key of a run's replicate group: runs of the same code
// (code: the result fingerprint of package change, or the full commit when
// the code could not be read) and the same config (free text, "" by
// default) share it whatever their seeds. 16 hex digits.
func ReplicateKey(code, config string) string {
	if code == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("replicate-v1\x00" + code + "\x00" + config))
	return hex.EncodeToString(sum[:8])
}

func validReplicate(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
