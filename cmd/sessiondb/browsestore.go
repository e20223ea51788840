package main

import (
	"context"
	"errors"
	"sync"

	"github.com/sessiondb/sessiondb"
)

// browseStore is what browse runs on for a SQLite file: reads go to a
// read-only handle, and a writer (which never creates the file) is opened at
// the first rename, pin, archive or delete. Browsing a file the user cannot
// write works, and only those keys say why they cannot.
type browseStore struct {
	sessiondb.Store // read-only
	e               *env

	mu sync.Mutex
	w  sessiondb.Store
}

// openBrowse opens what browse runs on, and returns where it is for the
// status line: a browseStore for a file; a database server, whose pool
// reads and writes, as it is.
func (e *env) openBrowse(ctx context.Context) (sessiondb.Store, string, error) {
	l, err := e.where()
	if err != nil {
		return nil, "", err
	}
	db, err := e.openRead(ctx)
	if err != nil {
		return nil, "", err
	}
	f, ok := db.(sessiondb.FileStore)
	if !ok {
		return db, l.String(), nil
	}
	return &browseStore{Store: db, e: e}, f.Path(), nil
}

func (s *browseStore) writer(ctx context.Context) (sessiondb.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		w, err := s.e.openWrite(ctx, false)
		if err != nil {
			return nil, err
		}
		s.w = w
	}
	return s.w, nil
}

// SetTitle renames a session through the writer.
func (s *browseStore) SetTitle(ctx context.Context, id, title string) error {
	w, err := s.writer(ctx)
	if err != nil {
		return err
	}
	return w.SetTitle(ctx, id, title)
}

// SetPinned pins or unpins a session through the writer.
func (s *browseStore) SetPinned(ctx context.Context, id string, pinned bool) error {
	w, err := s.writer(ctx)
	if err != nil {
		return err
	}
	return w.SetPinned(ctx, id, pinned)
}

// SetArchived archives or unarchives a session through the writer.
func (s *browseStore) SetArchived(ctx context.Context, id string, archived bool) error {
	w, err := s.writer(ctx)
	if err != nil {
		return err
	}
	return w.SetArchived(ctx, id, archived)
}

// DeleteSession deletes a session through the writer.
func (s *browseStore) DeleteSession(ctx context.Context, id string) ([]string, error) {
	w, err := s.writer(ctx)
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
	return errors.Join(append(errs, s.Store.Close())...)
}
