package sessiondb

import (
	"errors"
	"fmt"
)

// Error codes. Every error a Store returns carries one of them, so callers
// (the CLI, later an HTTP layer) can map failures without parsing text.
const (
	ECONFLICT    = "conflict"    // the request clashes with existing state (duplicate title, closed session)
	EINVALID     = "invalid"     // the input is malformed or out of range
	ENOTFOUND    = "not_found"   // the session or message does not exist
	EBUSY        = "busy"        // another process held the write lock for the whole retry budget
	ECORRUPT     = "corrupt"     // the database file is damaged
	EPERM        = "permission"  // the file, its directory or its file system refuses the access (permissions, a read-only mount), or the handle is read-only
	ETIMEOUT     = "timeout"     // the operation outlived its time budget (the context's deadline) and was stopped
	EUNAVAILABLE = "unavailable" // the database server cannot be reached or refuses the session (address, credentials, missing extension)
	EINTERNAL    = "internal"    // anything else: a bug, an I/O error, an unexpected driver error
)

// Error is the error type of the sessiondb domain. Code is one of the E*
// constants; Message is a human-readable sentence that names the cause and,
// where there is one, the fix.
type Error struct {
	Code    string
	Message string
	Err     error // underlying error, if any
}

// Error implements the error interface.
func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}
