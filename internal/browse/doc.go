// Package browse is the terminal UI of `sessiondb browse`: a Bubble Tea
// model over a session store with a session list, search as you type, a
// transcript reader and keys to rename, pin, archive, export and delete.
//
// The model talks to storage only through the small Store interface, which
// *sqlite.DB implements, so tests drive it without a terminal: they feed
// key, window-size and result messages to Update and read View.
//
// Every store call runs in a tea.Cmd, off the UI goroutine, and each is one
// short read on the store's read pool or one write transaction: the UI never
// holds a transaction open while a person reads, so another process
// appending to the database is never blocked by it, and a slow or failing
// call shows in the status line instead of freezing or ending the UI.
//
// The model keeps the context it was made with: Bubble Tea runs commands
// after Update has returned, so they cannot take the caller's context as an
// argument; the context is the lifetime of the whole program.
package browse
