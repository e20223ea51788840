package replicate

import "time"

// FailAfterBatch makes o stop the sync with err after batch n committed.
func FailAfterBatch(o *Options, n int, err error) {
	o.afterBatch = func(i int) error {
		if i == n {
			return err
		}
		return nil
	}
}

// SetLockWait sets how long a sync waits for another of its origin.
func SetLockWait(d time.Duration) { lockWait = d }
