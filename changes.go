package sessiondb

// ChangeWindow is how many of the most recently active sessions a change
// feed (the stores' Changes) returns on every call, so that a caller can
// notice a change to a session row that no new message or new session
// reveals (a title, an end, a pin written by another process) without
// reading the whole table.
const ChangeWindow = 50

// ChangePreviewChars is how much of a message's text a change feed
// returns; a store need read no more than four bytes a character of a
// plain text (structured content, behind ContentJSONPrefix, is read whole
// to be decoded).
const ChangePreviewChars = 200

// ChangePreview is the text a change feed reports for a message whose
// stored content starts with stored: its text (ContentText), valid UTF-8,
// at most ChangePreviewChars characters.
func ChangePreview(stored string) string {
	text := ScrubText(ContentText(DecodeContent(&stored)))
	if r := []rune(text); len(r) > ChangePreviewChars {
		text = string(r[:ChangePreviewChars])
	}
	return text
}

// ChangedSessions collects the ids of the sessions a change feed reports:
// each once, in the order first added.
type ChangedSessions struct {
	IDs  []string
	seen map[string]bool
}

// Add adds id unless it is there already.
func (c *ChangedSessions) Add(id string) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[id] {
		c.seen[id] = true
		c.IDs = append(c.IDs, id)
	}
}
