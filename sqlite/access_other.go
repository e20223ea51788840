//go:build unix && !linux

package sqlite

import "errors"

// statFS is not implemented outside Linux: Diagnose says the file system
// was not examined.
func statFS(path string) (fsStats, error) { return fsStats{}, errors.ErrUnsupported }
