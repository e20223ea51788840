package main

import (
	"context"
	"errors"
	"sync"

	"github.com/sessiondb/sessiondb/sqlite"
)

// browseStore is what browse runs on: reads go to a read-only handle, and a
// writer (which never creates the file) is opened at the first rename, pin,
// archive or delete. Browsing a file the user cannot write works, and only
// those keys say why they cannot.
type browseStore struct {
	*sqlite.DB // read-only
	e          *env

	mu sync.Mutex
	w  *sqlite.DB
}

// openBrowse opens the read-only handle of a browseStore.
func (e *env) openBrowse() (*browseStore, error) {
	db, err := e.openRead()
	if err != nil {
		return nil, err
	}
	return &browseStore{DB: db, e: e}, nil
}

func (s *browseStore) writer() (*sqlite.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		w, err := s.e.openWrite(false)
		if err != nil {
			return nil, err
		}
		s.w = w
	}
	return s.w, nil
}

// SetTitle renames a session through the writer.
func (s *browseStore) SetTitle(ctx context.Context, id, title string) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	return w.SetTitle(ctx, id, title)
}

// SetPinned pins or unpins a session through the writer.
func (s *browseStore) SetPinned(ctx context.Context, id string, pinned bool) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	return w.SetPinned(ctx, id, pinned)
}

// SetArchived archives or unarchives a session through the writer.
func (s *browseStore) SetArchived(ctx context.Context, id string, archived bool) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	return w.SetArchived(ctx, id, archived)
}

// DeleteSession deletes a session through the writer.
func (s *browseStore) DeleteSession(ctx context.Context, id string) ([]string, error) {
	w, err := s.writer()
	if err != nil {
		return nil, err
	}
	return w.DeleteSession(ctx, id)
}

// Close closes both handles.
func (s *browseStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(append(errs, s.DB.Close())...)
}
