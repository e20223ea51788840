package main

import (
	"os"
	"strconv"
	"strings"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// maxMessageSizeEnv names the environment variable that bounds a message
// the command writes.
const maxMessageSizeEnv = sqlite.MaxMessageSizeEnv

// maxMessageBytes is the largest message the command writes: the size in
// $SESSIONDB_MAX_MESSAGE_SIZE, else sessiondb.DefaultMaxMessageBytes; -1
// for "unlimited".
func maxMessageBytes() (int64, error) {
	v := strings.TrimSpace(os.Getenv(maxMessageSizeEnv))
	if v == "" {
		return sessiondb.DefaultMaxMessageBytes, nil
	}
	if strings.EqualFold(v, "unlimited") {
		return -1, nil
	}
	n, ok := parseSize(v)
	if !ok || n <= 0 {
		return 0, usagef("%s=%q: want a size such as 128MiB, 500K or 1048576 (bytes), or unlimited", maxMessageSizeEnv, v)
	}
	return n, nil
}

// parseSize reads a byte count with an optional binary unit: B, K or KiB,
// M or MiB, G or GiB (any case; KB, MB and GB are read as binary units
// too).
func parseSize(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := strings.TrimSpace(s[:i]), strings.ToLower(strings.TrimSpace(s[i:]))
	var shift uint
	switch unit {
	case "", "b":
	case "k", "kb", "kib":
		shift = 10
	case "m", "mb", "mib":
		shift = 20
	case "g", "gb", "gib":
		shift = 30
	default:
		return 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)>>shift {
		return 0, false
	}
	return n << shift, true
}
