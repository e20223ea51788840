package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// corpus is the search corpus: every message has a name, and every
// expected result below is written as names, derived by hand from the
// texts.
type corpus struct {
	*harness
	ids     map[string]int64                // message name → id
	msgs    map[string]sessiondb.NewMessage // message name → the message as appended
	names   map[int64]string                // id → message name
	started map[string]float64              // session id → started_at
	next    float64                         // the next message's timestamp
}

// session creates a corpus session; its model is "model-" + source.
func (c *corpus) session(id, source string) {
	c.t.Helper()
	c.started[id] = base - 10000 + float64(len(c.started))
	c.create(sessiondb.NewSession{ID: id, Source: source, Model: "model-" + source, StartedAt: c.started[id]})
}

// msg appends a named message, ten seconds after the previous one unless
// m has a timestamp of its own.
func (c *corpus) msg(name, sid string, m sessiondb.NewMessage) {
	c.t.Helper()
	if _, dup := c.ids[name]; dup {
		c.t.Fatalf("message name %q used twice", name)
	}
	if m.Timestamp == 0 {
		c.next += 10
		m.Timestamp = c.next
	}
	id := c.add(sid, m)[0]
	m.SessionID = sid
	c.ids[name], c.names[id], c.msgs[name] = id, name, m
}

// text appends a named message of plain text.
func (c *corpus) text(name, sid, role, content string) {
	c.t.Helper()
	c.msg(name, sid, sessiondb.NewMessage{Role: role, Content: content})
}

// pagewords is how many messages hold "pageword" (and how many "翻页").
const pagewords = 25

// rejected and kept are how many "pagerank" (and "排名") messages the
// filters of the ranked-page cases reject (telegram assistant rows, ranked
// best) and keep (cli user rows).
const rejected, kept = 6, 8

// newCorpus builds the search corpus in a fresh store.
func newCorpus(t *testing.T, s *suite) *corpus {
	c := &corpus{harness: s.store(t), ids: map[string]int64{}, names: map[int64]string{},
		msgs:    map[string]sessiondb.NewMessage{},
		started: map[string]float64{}, next: base}
	for _, x := range [][2]string{{"s-cli", "cli"}, {"s-tg", "telegram"}, {"s-dc", "discord"}, {"s-ctx", "cli"},
		{"c-cli", "cli"}, {"c-tg", "telegram"}, {"c-dc", "discord"}, {"s-page", "cli"}, {"pr-tg", "telegram"}, {"pr-cli", "cli"},
		{"s-mm", "cli"}, {"s-cut", "cli"}, {"s-order", "cli"}, {"s-deep", "cli"}, {"s-reason", "cli"}} {
		c.session(x[0], x[1])
	}

	// words, phrases, prefixes, operators
	c.text("docker1", "s-cli", "user", "docker and compose are both installed")
	c.text("docker2", "s-cli", "assistant", "use docker-compose up to start the stack")
	c.text("docker3", "s-tg", "user", "docker images are piling up")
	c.text("poem", "s-dc", "user", "compose a short poem please")
	c.text("dockyard", "s-dc", "assistant", "the ship left the dockyard at noon")
	c.msg("hidden", "s-cli", sessiondb.NewMessage{Role: "user", Content: "docker hidden scaffolding", DisplayKind: "hidden"})
	c.text("phrase", "s-cli", "user", "configure bridge networking quickly")
	c.text("phraseDecoy", "s-tg", "user", "networking across a bridge is slow")
	// hyphenated, dotted and path terms
	c.text("email", "s-cli", "user", "send the report to admin@example.com today")
	c.text("url", "s-tg", "assistant", "see https://docs.example.org/guide for details")
	c.text("path", "s-cli", "assistant", "edit /etc/nginx/nginx.conf and reload")
	c.text("confDecoy", "s-tg", "user", "the conf for nginx lives elsewhere")
	c.text("version", "s-dc", "user", "upgraded to release 2.4.1 yesterday")
	c.text("chatSend", "s-dc", "user", "run the chat-send command")
	c.text("chatDecoy", "s-dc", "assistant", "send a chat later")
	// tool calls and tool rows
	c.msg("toolCall", "s-cli", sessiondb.NewMessage{Role: "assistant", Content: "let me look that up",
		ToolCalls: json.RawMessage(`[{"id":"call_1","type":"function","function":{"name":"funcnamemarker","arguments":"{\"query\":\"argmarkerzz\"}"}}]`)})
	c.msg("toolRow", "s-cli", sessiondb.NewMessage{Role: "tool", Content: "lookup done", ToolName: "toolnamemarker", ToolCallID: "call_1"})
	c.text("contentOnly", "s-cli", "user", "contentonlymarker appears in plain text")
	// a Latin word glued to CJK in a tool call: one unicode61 token, and
	// out of the trigram index (content and tool name only); the bigram
	// index splits it
	c.msg("gluedCall", "s-cli", sessiondb.NewMessage{Role: "assistant", Content: "calling the hook",
		ToolCalls: json.RawMessage(`[{"id":"call_2","type":"function","function":{"name":"hook","arguments":"{\"note\":\"钩子gluedmarker\"}"}}]`)})
	// context
	c.text("ctx1", "s-ctx", "user", "ctxalpha opening line")
	c.text("ctx2", "s-ctx", "assistant", "ctxmarker in the middle")
	c.text("ctx3", "s-ctx", "user", "ctxomega closing line")
	// context: multimodal neighbours flattened, long ones cut, neighbours
	// by timestamp (the third message is older than the second)
	c.msg("mmImage", "s-mm", sessiondb.NewMessage{Role: "user", Content: []any{map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://cdn.invalid/cat.png"}}}})
	c.msg("mmHit", "s-mm", sessiondb.NewMessage{Role: "user", Content: []any{
		map[string]any{"type": "text", "text": "zebra words"},
		map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://cdn.invalid/stripes.png"}},
		map[string]any{"type": "text", "text": "and stripes"},
	}})
	c.msg("mmNil", "s-mm", sessiondb.NewMessage{Role: "assistant"})
	c.text("cutPrev", "s-cut", "user", longText("previous"))
	c.text("cutHit", "s-cut", "assistant", longText("cutmarker"))
	c.text("cutNext", "s-cut", "user", "short next")
	c.msg("orderFirst", "s-order", sessiondb.NewMessage{Role: "user", Content: "first words", Timestamp: base - 300})
	c.msg("orderHit", "s-order", sessiondb.NewMessage{Role: "assistant", Content: "needlematch here", Timestamp: base - 100})
	c.msg("orderLater", "s-order", sessiondb.NewMessage{Role: "user", Content: "written later but older", Timestamp: base - 200})
	// tool rows: the word index holds their first 8192 characters, a
	// tool-role search the whole text (as Hermes does)
	c.msg("deepTool", "s-deep", sessiondb.NewMessage{Role: "tool", ToolName: "shell", ToolCallID: "c",
		Content: "shallowmarker " + strings.Repeat("padding ", 1500) + "deepmarker " + strings.Repeat("padding ", 1200)})
	c.text("deepUser", "s-deep", "user", "deepmarker mentioned by the user")
	// reasoning, searched only when asked for, and only on assistant rows
	c.msg("reasoning", "s-reason", sessiondb.NewMessage{Role: "assistant", Content: "the reply", Reasoning: ptr("first I thought about reasonmarker carefully")})
	c.msg("reasoningUser", "s-reason", sessiondb.NewMessage{Role: "user", Content: "a question", Reasoning: ptr("reasonmarker in a user row")})
	c.msg("reasoningContent", "s-reason", sessiondb.NewMessage{Role: "assistant", Content: "the reply", ReasoningContent: ptr("rcmarker thinking")})
	c.msg("reasoningDetails", "s-reason", sessiondb.NewMessage{Role: "assistant", Content: "the reply",
		ReasoningDetails: json.RawMessage(`[{"type":"reasoning.text","text":"detailmarker deep down","keymarkerzz":1}]`)})
	// rank: the middle one in time is the best match
	c.text("rankMedium", "s-cli", "user", "rankword rankword plus a few more words here")
	c.text("rankDense", "s-cli", "user", "rankword rankword rankword")
	c.text("rankSparse", "s-cli", "user", "rankword appears once in this considerably longer message that keeps going with many other filler words around it")

	// CJK, Korean, Japanese, mixed
	c.text("memory", "c-cli", "user", "我们之前讨论了聊天记录，记忆断裂问题很严重")
	c.text("agent", "c-cli", "user", "讨论Agent通信协议")
	c.text("memSystem", "c-tg", "assistant", "新的记忆系统上线了")
	c.text("breakLink", "c-dc", "user", "断裂连接需要修复")
	c.text("youer", "c-cli", "user", "请修改youer服务端配置")
	c.text("korean", "c-tg", "user", "안녕하세요 반갑습니다")
	c.text("japanese", "c-dc", "assistant", "こんにちは 世界です")
	c.text("deployCLI", "c-cli", "user", "开始部署服务")
	c.text("deployTG", "c-tg", "assistant", "部署完成了")
	c.msg("deployHidden", "c-cli", sessiondb.NewMessage{Role: "user", Content: "隐藏的部署脚手架", DisplayKind: "hidden"})
	c.msg("deployTool", "c-cli", sessiondb.NewMessage{Role: "tool", Content: "部署日志", ToolName: "shell", ToolCallID: "y"})
	c.text("lastNight1", "c-cli", "user", "昨晚我们开会了")
	c.text("lastNight2", "c-dc", "assistant", "昨晚下雨了")

	// paging
	for i := 0; i < pagewords; i++ {
		c.text(fmt.Sprintf("page%02d", i), "s-page", []string{"user", "assistant"}[i%2], fmt.Sprintf("pageword number %d", i))
		c.text(fmt.Sprintf("cjkPage%02d", i), "s-page", []string{"user", "assistant"}[i%2], fmt.Sprintf("翻页测试第%d条pagecjk", i))
	}
	// a ranked page under a source filter: the telegram rows rank first
	// (short, the term three times); the cli rows rank by length
	// (assistant rows, so a user role filter rejects them too); the same
	// for the CJK word 排名
	for i := 0; i < rejected; i++ {
		c.text(fmt.Sprintf("prTG%02d", i), "pr-tg", "assistant", "pagerank pagerank pagerank")
		c.text(fmt.Sprintf("cjkTG%02d", i), "pr-tg", "assistant", "排名排名排名")
	}
	for i := kept - 1; i >= 0; i-- { // inserted longest first, so rank order is not id order
		c.text(fmt.Sprintf("prCLI%02d", i), "pr-cli", "user", "pagerank "+strings.Repeat("filler ", i+1)+fmt.Sprintf("end%d", i))
		c.text(fmt.Sprintf("cjkCLI%02d", i), "pr-cli", "user", "排名"+strings.Repeat("填充", i+1)+"结束")
	}
	return c
}

// on returns c reporting to t.
func (c *corpus) on(t *testing.T) *corpus {
	d := *c
	d.harness = c.harness.on(t)
	return &d
}

// complete fails unless hit h carries its message's session, role, time
// and session fields, and a snippet.
func (c *corpus) complete(t *testing.T, h sessiondb.SearchHit) {
	t.Helper()
	name, ok := c.names[h.ID]
	if !ok {
		t.Errorf("hit id %d is no corpus message", h.ID)
		return
	}
	m := c.msgs[name]
	source := "<no model>"
	if h.Model != nil {
		source = strings.TrimPrefix(*h.Model, "model-")
	}
	if h.SessionID != m.SessionID || h.Role != m.Role || h.Timestamp != m.Timestamp || h.SessionStarted != c.started[m.SessionID] ||
		h.Source == "" || h.Source != source || h.Snippet == nil {
		t.Errorf("hit %s = {session %s, role %s, time %v, started %v, source %q, model %s, snippet %v}; want {%s, %s, %v, %v, the session's}",
			name, h.SessionID, h.Role, h.Timestamp, h.SessionStarted, h.Source, str(h.Model), h.Snippet,
			m.SessionID, m.Role, m.Timestamp, c.started[m.SessionID])
	}
}

// longText is a word followed by 300 two-byte characters and a tail.
func longText(word string) string { return word + " " + strings.Repeat("é", 300) + " tail" }

// hitNames returns the names of hits in order.
func (c *corpus) hitNames(hits []sessiondb.SearchHit) []string {
	out := []string{}
	for _, h := range hits {
		name, ok := c.names[h.ID]
		if !ok {
			name = fmt.Sprintf("<unknown id %d>", h.ID)
		}
		out = append(out, name)
	}
	return out
}

// searchCase is one query against the corpus.
type searchCase struct {
	name  string
	q     string
	o     sessiondb.SearchOptions
	want  []string // message names: the match set (or the order when ordered)
	order bool     // compare the order too
	rank  bool     // the order is a rank order (skipped under RankOrderDiffers)
	mark  string   // every snippet must hold this (e.g. ">>>docker<<<")
}

// names abbreviates a list of message names.
func names(ns ...string) []string { return ns }

// seq returns the names prefix+i for i in [from, to) with the given step.
func seq(prefix string, from, to, step int) []string {
	var out []string
	for i := from; i != to; i += step {
		out = append(out, fmt.Sprintf("%s%02d", prefix, i))
	}
	return out
}

var (
	docker   = names("docker1", "docker2", "docker3")
	noHits   = names()
	deploy2  = names("deployCLI", "deployTG")
	pageAll  = seq("page", 0, pagewords, 1)
	pageDesc = seq("page", pagewords-1, -1, -1)
)

// searchCases are the query classes with the hits they must give.
var searchCases = []searchCase{
	// words
	{name: "a word", q: "docker", want: docker, mark: ">>>docker<<<"},
	{name: "a word is case-insensitive", q: "DOCKER", want: docker},
	{name: "bare words are ANDed", q: "docker compose", want: names("docker1", "docker2")},
	{name: "AND is explicit AND", q: "docker AND images", want: names("docker3")},
	{name: "lower-case and is a word", q: "docker and compose", want: names("docker1")},
	{name: "a word in no message", q: "zzyzx", want: noHits},
	{name: "hidden rows are never found", q: "scaffolding", want: noHits},
	{name: "a special character between words is a space", q: "docker+compose", want: names("docker1", "docker2")},
	{name: "a colon between words is a space", q: "docker:compose", want: names("docker1", "docker2")},
	{name: "brackets around a word are spaces", q: "docker(compose)", want: names("docker1", "docker2")},
	{name: "a comma between words is a space", q: "docker,compose", want: names("docker1", "docker2")},
	{name: "a word in multimodal text parts", q: "zebra", want: names("mmHit"), mark: ">>>zebra<<<"},
	// phrases
	{name: "a phrase matches adjacent words in order", q: `"bridge networking"`, want: names("phrase")},
	{name: "the same words unquoted match anywhere", q: `bridge networking`, want: names("phrase", "phraseDecoy")},
	{name: "a phrase across a hyphen", q: `"docker compose"`, want: names("docker2")},
	{name: "a prefix phrase", q: `"bridge net"*`, want: names("phrase")},
	{name: "an unmatched quote is a space", q: `"docker`, want: docker},
	// prefixes
	{name: "a prefix", q: "dock*", want: names("docker1", "docker2", "docker3", "dockyard")},
	{name: "a prefix of a second word", q: "netw*", want: names("phrase", "phraseDecoy")},
	{name: "a leading star is dropped", q: "*docker", want: docker},
	// OR, NOT
	{name: "OR", q: "docker OR poem", want: names("docker1", "docker2", "docker3", "poem")},
	{name: "NOT", q: "docker NOT compose", want: names("docker3")},
	{name: "NOT the other way", q: "compose NOT docker", want: names("poem")},
	{name: "a leading NOT is dropped", q: "NOT poem", want: names("poem")},
	{name: "a trailing OR is dropped", q: "poem OR", want: names("poem")},
	// hyphenated, dotted, paths
	{name: "a hyphenated term is a phrase", q: "docker-compose", want: names("docker2")},
	{name: "a hyphenated command, not its words apart", q: "chat-send", want: names("chatSend")},
	{name: "a dotted host name", q: "example.com", want: names("email")},
	{name: "a dotted host name of the other message", q: "docs.example.org", want: names("url")},
	{name: "an address", q: "admin@example.com", want: names("email")},
	{name: "a word of both host names", q: "example", want: names("email", "url")},
	{name: "a file name is a phrase", q: "nginx.conf", want: names("path")},
	{name: "its words apart match anywhere", q: "nginx conf", want: names("path", "confDecoy")},
	{name: "a path", q: "/etc/nginx/nginx.conf", want: names("path")},
	{name: "a version number", q: "2.4.1", want: names("version")},
	// tool calls and tool rows
	{name: "a tool call's function name", q: "funcnamemarker", want: names("toolCall"), mark: ">>>"},
	{name: "a tool call's arguments", q: "argmarkerzz", want: names("toolCall"), mark: ">>>"},
	{name: "a tool row's tool name", q: "toolnamemarker", want: names("toolRow"), mark: ">>>"},
	{name: "a tool row's start", q: "shallowmarker", want: names("deepTool")},
	{name: "a tool row's end only with the tool role", q: "deepmarker", want: names("deepUser")},
	{name: "a tool-role search reads the whole tool row", q: "deepmarker", o: sessiondb.SearchOptions{Roles: []string{"tool"}}, want: names("deepTool")},
	{name: "the tool role among others", q: "deepmarker", o: sessiondb.SearchOptions{Roles: []string{"tool", "user"}}, want: names("deepTool", "deepUser")},
	{name: "a tool-role search is newest first", q: "deepmarker", o: sessiondb.SearchOptions{Roles: []string{"tool", "user"}}, want: names("deepUser", "deepTool"), order: true},
	{name: "a tool-role search oldest first", q: "deepmarker", o: sessiondb.SearchOptions{Roles: []string{"tool", "user"}, Sort: "oldest"}, want: names("deepTool", "deepUser"), order: true},
	{name: "a tool-role search with NOT", q: "deepmarker NOT mentioned", o: sessiondb.SearchOptions{Roles: []string{"tool", "user"}}, want: names("deepTool")},
	{name: "a tool-role search is case-insensitive", q: "DeepMarker", o: sessiondb.SearchOptions{Roles: []string{"tool"}}, want: names("deepTool")},
	// reasoning
	{name: "reasoning is not searched by default", q: "reasonmarker", want: noHits},
	{name: "reasoning when asked for", q: "reasonmarker", o: sessiondb.SearchOptions{IncludeReasoning: true}, want: names("reasoning"), mark: "reasonmarker"},
	{name: "reasoning_content when asked for", q: "rcmarker", o: sessiondb.SearchOptions{IncludeReasoning: true}, want: names("reasoningContent")},
	{name: "the text of reasoning_details", q: "detailmarker", o: sessiondb.SearchOptions{IncludeReasoning: true}, want: names("reasoningDetails")},
	{name: "a reasoning search is case-insensitive", q: "ARGMARKERZZ", o: sessiondb.SearchOptions{IncludeReasoning: true}, want: names("toolCall")},
	{name: "not the keys of reasoning_details", q: "keymarkerzz", o: sessiondb.SearchOptions{IncludeReasoning: true}, want: noHits},
	{name: "reasoning with a role filter", q: "reasonmarker", o: sessiondb.SearchOptions{IncludeReasoning: true, Roles: []string{"user"}}, want: noHits},
	{name: "a role filter applies to a tool-call match", q: "argmarkerzz", o: sessiondb.SearchOptions{Roles: []string{"user"}}, want: noHits},
	// filters
	{name: "only one source", q: "docker", o: sessiondb.SearchOptions{Sources: []string{"telegram"}}, want: names("docker3")},
	{name: "two sources", q: "docker OR poem", o: sessiondb.SearchOptions{Sources: []string{"telegram", "discord"}}, want: names("docker3", "poem")},
	{name: "exclude a source", q: "docker", o: sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, want: names("docker1", "docker2")},
	{name: "exclusion wins over inclusion", q: "docker", o: sessiondb.SearchOptions{Sources: []string{"cli", "telegram"}, ExcludeSources: []string{"telegram"}}, want: names("docker1", "docker2")},
	{name: "an empty source list matches nothing", q: "docker", o: sessiondb.SearchOptions{Sources: []string{}}, want: noHits},
	{name: "an unknown source matches nothing", q: "docker", o: sessiondb.SearchOptions{Sources: []string{"nosuch"}}, want: noHits},
	{name: "role user", q: "docker", o: sessiondb.SearchOptions{Roles: []string{"user"}}, want: names("docker1", "docker3")},
	{name: "role assistant", q: "docker", o: sessiondb.SearchOptions{Roles: []string{"assistant"}}, want: names("docker2")},
	{name: "an empty role list is no filter", q: "docker", o: sessiondb.SearchOptions{Roles: []string{}}, want: docker},
	{name: "role and source together", q: "docker", o: sessiondb.SearchOptions{Roles: []string{"user"}, Sources: []string{"cli"}}, want: names("docker1")},
	// sorts
	{name: "newest first", q: "dock*", o: sessiondb.SearchOptions{Sort: "newest"}, want: names("dockyard", "docker3", "docker2", "docker1"), order: true},
	{name: "oldest first", q: "dock*", o: sessiondb.SearchOptions{Sort: "oldest"}, want: names("docker1", "docker2", "docker3", "dockyard"), order: true},
	{name: "sort names are case-insensitive and trimmed", q: "dock*", o: sessiondb.SearchOptions{Sort: " Newest "}, want: names("dockyard", "docker3", "docker2", "docker1"), order: true},
	{name: "rank: many occurrences in a short text first", q: "rankword", want: names("rankDense", "rankMedium", "rankSparse"), order: true, rank: true},
	{name: "rank is the default and unknown sorts", q: "rankword", o: sessiondb.SearchOptions{Sort: "bogus"}, want: names("rankDense", "rankMedium", "rankSparse"), order: true, rank: true},
	{name: "newest first, not rank", q: "rankword", o: sessiondb.SearchOptions{Sort: "newest"}, want: names("rankSparse", "rankDense", "rankMedium"), order: true},
	{name: "oldest first, not rank", q: "rankword", o: sessiondb.SearchOptions{Sort: "oldest"}, want: names("rankMedium", "rankDense", "rankSparse"), order: true},
	// limit and offset
	{name: "limit 0 means 20", q: "pageword", o: sessiondb.SearchOptions{Sort: "oldest"}, want: pageAll[:sessiondb.DefaultSearchLimit], order: true},
	{name: "a limit past the matches", q: "pageword", o: sessiondb.SearchOptions{Limit: 1000}, want: pageAll},
	{name: "a newest page", q: "pageword", o: sessiondb.SearchOptions{Sort: "newest", Limit: 7, Offset: 7}, want: pageDesc[7:14], order: true},
	{name: "the last oldest page", q: "pageword", o: sessiondb.SearchOptions{Sort: "oldest", Limit: 7, Offset: 21}, want: pageAll[21:], order: true},
	{name: "an offset past the end", q: "pageword", o: sessiondb.SearchOptions{Offset: 100}, want: noHits},
	{name: "a page of a filtered search", q: "pageword", o: sessiondb.SearchOptions{Roles: []string{"assistant"}, Sort: "newest", Limit: 3, Offset: 2},
		want: names("page19", "page17", "page15"), order: true},

	// CJK: one character
	{name: "one CJK character", q: "署", want: names("deployCLI", "deployTG", "deployTool")},
	{name: "one CJK character in two words", q: "忆", want: names("memory", "memSystem")},
	{name: "one CJK character, one source", q: "署", o: sessiondb.SearchOptions{Sources: []string{"telegram"}}, want: names("deployTG")},
	{name: "one CJK character, excluded source", q: "署", o: sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, want: names("deployCLI", "deployTool")},
	{name: "one CJK character, one role", q: "署", o: sessiondb.SearchOptions{Roles: []string{"user"}}, want: names("deployCLI")},
	{name: "one CJK character in no message", q: "鑫", want: noHits},
	{name: "hidden rows are never found by CJK", q: "脚手架", want: noHits},
	{name: "hidden rows are never found by one CJK character", q: "隐", want: noHits},
	// CJK: two characters (tool rows are not in the CJK index, as in Hermes)
	{name: "two CJK characters", q: "记忆", want: names("memory", "memSystem"), mark: ">>>"},
	{name: "two CJK characters, not tool rows", q: "部署", want: deploy2},
	{name: "two CJK characters in tool rows with the tool role", q: "部署", o: sessiondb.SearchOptions{Roles: []string{"tool"}}, want: names("deployTool")},
	{name: "two CJK characters, one source", q: "部署", o: sessiondb.SearchOptions{Sources: []string{"telegram"}}, want: names("deployTG")},
	{name: "two CJK characters, excluded source", q: "部署", o: sessiondb.SearchOptions{ExcludeSources: []string{"telegram"}}, want: names("deployCLI")},
	{name: "two CJK characters, one role", q: "部署", o: sessiondb.SearchOptions{Roles: []string{"assistant"}}, want: names("deployTG")},
	{name: "two CJK characters in two words", q: "讨论", want: names("memory", "agent")},
	{name: "two CJK characters next to Latin", q: "服务", want: names("deployCLI", "youer")},
	{name: "two CJK characters, newest first", q: "记忆", o: sessiondb.SearchOptions{Sort: "newest"}, want: names("memSystem", "memory"), order: true},
	{name: "two CJK characters, oldest first", q: "我们", o: sessiondb.SearchOptions{Sort: "oldest"}, want: names("memory", "lastNight1"), order: true},
	{name: "two CJK words are ANDed", q: "记忆 断裂", want: names("memory")},
	// CJK: three and more characters
	{name: "four CJK characters", q: "记忆断裂", want: names("memory"), mark: ">>>"},
	{name: "four CJK characters of another message", q: "记忆系统", want: names("memSystem")},
	{name: "three CJK characters", q: "服务端", want: names("youer")},
	{name: "a whole CJK sentence", q: "断裂连接需要修复", want: names("breakLink")},
	{name: "CJK OR", q: "记忆系统 OR 断裂连接", want: names("memSystem", "breakLink")},
	{name: "CJK NOT", q: "记忆 NOT 断裂", want: names("memSystem")},
	{name: "CJK and a Latin word apart", q: "通信协议 Agent", want: names("agent")},
	{name: "CJK with a Latin word in no message", q: "记忆 docker", want: noHits},
	{name: "CJK in no message", q: "不存在", want: noHits},
	// Korean, Japanese
	{name: "Korean, two syllables", q: "안녕", want: names("korean")},
	{name: "Korean, one syllable", q: "녕", want: names("korean")},
	{name: "Korean, a whole word", q: "반갑습니다", want: names("korean")},
	{name: "Japanese kana", q: "こんにちは", want: names("japanese")},
	{name: "Japanese kanji", q: "世界", want: names("japanese")},
	// mixed Latin and CJK
	{name: "Latin glued before CJK", q: "Agent通信", want: names("agent")},
	{name: "Latin glued inside CJK", q: "修改youer服务端", want: names("youer")},
	{name: "Latin glued after CJK", q: "youer服务端", want: names("youer")},
	{name: "a Latin word glued to CJK in a tool call", q: "gluedmarker", want: names("gluedCall")},
	// a Latin query no index of words finds: the trigram index's substrings
	{name: "the inside of a word", q: "ockyar", want: names("dockyard"), mark: ">>>ockyar<<<"},
	{name: "the inside of a word is case-insensitive", q: "OCKYAR", want: names("dockyard")},
	{name: "the insides of two words", q: "ockyar hip", want: names("dockyard")},
	{name: "the inside of one word or another", q: "ockyar OR ridg", want: names("dockyard", "phrase", "phraseDecoy")},
	{name: "the inside of a word, not of another", q: "ridg NOT slow", want: names("phrase")},
	{name: "a Latin word inside CJK text", q: "youer", want: names("youer"), mark: ">>>youer<<<"},
}

func testSearch(t *testing.T, s *suite) {
	c := newCorpus(t, s)

	t.Run("match sets", func(t *testing.T) {
		for _, tc := range searchCases {
			if tc.rank && s.opts.RankOrderDiffers {
				continue // the backend's rank order is documented to differ
			}
			t.Run(tc.name, func(t *testing.T) {
				hits := c.on(t).search(tc.q, tc.o)
				got := c.hitNames(hits)
				want := tc.want
				if !tc.order {
					got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
				}
				if !slices.Equal(got, want) {
					t.Errorf("Search(%q, %+v) = %d hits %v, want %d %v", tc.q, tc.o, len(got), got, len(want), want)
				}
				for _, h := range hits {
					if tc.mark != "" && (h.Snippet == nil || !strings.Contains(*h.Snippet, tc.mark)) {
						t.Errorf("hit %s snippet = %q, want it to hold %q", c.names[h.ID], str(h.Snippet), tc.mark)
					}
					c.complete(t, h)
				}
			})
		}
	})

	t.Run("hits carry the message and its session", func(t *testing.T) {
		for _, tt := range []struct {
			q, name, session, role, source, tool string
		}{
			{"images", "docker3", "s-tg", "user", "telegram", "<nil>"},
			{"toolnamemarker", "toolRow", "s-cli", "tool", "cli", "toolnamemarker"},
			{"部署完成", "deployTG", "c-tg", "assistant", "telegram", "<nil>"},
		} {
			c := c.on(t)
			hits := c.search(tt.q, sessiondb.SearchOptions{})
			if got := c.hitNames(hits); !slices.Equal(got, []string{tt.name}) {
				t.Fatalf("Search(%q) = %v, want [%s]", tt.q, got, tt.name)
			}
			h := hits[0]
			fields(t, tt.name+" hit",
				field{"SessionID", h.SessionID, tt.session},
				field{"Role", h.Role, tt.role},
				field{"Source", h.Source, tt.source},
				field{"Model", str(h.Model), "model-" + tt.source},
				field{"ToolName", str(h.ToolName), tt.tool},
				field{"Timestamp", fmt.Sprint(h.Timestamp), fmt.Sprint(c.msgs[tt.name].Timestamp)},
				field{"SessionStarted", fmt.Sprint(h.SessionStarted), fmt.Sprint(c.started[tt.session])},
			)
		}
	})

	t.Run("a short match's snippet is the marked text", func(t *testing.T) {
		hits := c.on(t).search("contentonlymarker", sessiondb.SearchOptions{})
		if len(hits) != 1 {
			t.Fatalf("%d hits, want 1", len(hits))
		}
		if got, want := str(hits[0].Snippet), ">>>contentonlymarker<<< appears in plain text"; got != want {
			t.Errorf("snippet = %q, want %q", got, want)
		}
	})

	// The substring routes (a tool-role search, one CJK character) cut
	// the snippet as substr(content, max(1, instr(content, term) - 40), 120).
	t.Run("a substring match's snippet is the text around the term", func(t *testing.T) {
		for _, tt := range []struct {
			q, name string
			o       sessiondb.SearchOptions
		}{
			{"deepmarker", "deepTool", sessiondb.SearchOptions{Roles: []string{"tool"}}},
			{"shallowmarker", "deepTool", sessiondb.SearchOptions{Roles: []string{"tool"}}},
			{"署", "deployCLI", sessiondb.SearchOptions{Roles: []string{"user"}}},
		} {
			hits := c.on(t).search(tt.q, tt.o)
			if len(hits) != 1 || c.names[hits[0].ID] != tt.name {
				t.Fatalf("Search(%q) = %v, want [%s]", tt.q, c.hitNames(hits), tt.name)
			}
			content := []rune(c.msgs[tt.name].Content.(string))
			at := strings.Index(string(content), tt.q)
			start := max(0, len([]rune(string(content)[:at]))-40)
			if got, want := str(hits[0].Snippet), string(content[start:min(len(content), start+120)]); got != want {
				t.Errorf("Search(%q) snippet = %q, want %q", tt.q, got, want)
			}
		}
	})

	t.Run("context is the previous message, the hit and the next one", func(t *testing.T) {
		for q, want := range map[string][]sessiondb.ContextMessage{
			"ctxmarker": {{Role: "user", Content: "ctxalpha opening line"}, {Role: "assistant", Content: "ctxmarker in the middle"}, {Role: "user", Content: "ctxomega closing line"}},
			"ctxalpha":  {{Role: "user", Content: "ctxalpha opening line"}, {Role: "assistant", Content: "ctxmarker in the middle"}},
			"ctxomega":  {{Role: "assistant", Content: "ctxmarker in the middle"}, {Role: "user", Content: "ctxomega closing line"}},
			"zebra":     {{Role: "user", Content: "[multimodal content]"}, {Role: "user", Content: "zebra words and stripes"}, {Role: "assistant", Content: ""}},
			"cutmarker": {{Role: "user", Content: string([]rune(longText("previous"))[:sessiondb.ContextChars])},
				{Role: "assistant", Content: string([]rune(longText("cutmarker"))[:sessiondb.ContextChars])}, {Role: "user", Content: "short next"}},
			"needlematch": {{Role: "user", Content: "written later but older"}, {Role: "assistant", Content: "needlematch here"}},
		} {
			hits := c.on(t).search(q, sessiondb.SearchOptions{})
			if len(hits) != 1 {
				t.Fatalf("Search(%q): %d hits, want 1", q, len(hits))
			}
			equal(t, q+" context", hits[0].Context, want)
		}
	})

	t.Run("session sets", func(t *testing.T) {
		for q, want := range map[string][]string{"昨晚": {"c-cli", "c-dc"}, "docker": {"s-cli", "s-tg"}, "pagerank": {"pr-cli", "pr-tg"}} {
			got := hitSessions(c.on(t).search(q, sessiondb.SearchOptions{Limit: 100}))
			sameSet(t, q+" sessions", slices.Compact(slices.Sorted(slices.Values(got))), want)
		}
	})

	// Paging is checked on each route a query can take: the word index,
	// CJK words, one CJK character, a Latin word glued to CJK.
	for _, route := range []struct{ q, prefix string }{{"pageword", "page"}, {"翻页", "cjkPage"}, {"翻", "cjkPage"}, {"pagecjk", "cjkPage"}} {
		t.Run("pages add up to the whole result, query "+route.q, func(t *testing.T) {
			for _, sortBy := range []string{"", "newest", "oldest"} {
				c := c.on(t)
				all := c.hitNames(c.search(route.q, sessiondb.SearchOptions{Limit: 100, Sort: sortBy}))
				var pages []string
				for off := 0; off < pagewords+5; off += 7 {
					page := c.hitNames(c.search(route.q, sessiondb.SearchOptions{Limit: 7, Offset: off, Sort: sortBy}))
					if got, want := len(page), min(7, max(pagewords-off, 0)); got != want {
						t.Errorf("sort %q offset %d: %d hits, want %d", sortBy, off, got, want)
					}
					pages = append(pages, page...)
				}
				equal(t, fmt.Sprintf("sort %q pages", sortBy), pages, all)
				sameSet(t, fmt.Sprintf("sort %q hits", sortBy), pages, seq(route.prefix, 0, pagewords, 1))
				assistants := c.hitNames(c.search(route.q, sessiondb.SearchOptions{Roles: []string{"assistant"}, Limit: 4, Offset: 3, Sort: sortBy}))
				var want []string
				for _, name := range all {
					if c.msgs[name].Role == "assistant" {
						want = append(want, name)
					}
				}
				equal(t, fmt.Sprintf("sort %q assistant page", sortBy), assistants, want[3:7])
			}
		})
	}

	// The best-ranked rows are in a source (and a role) the filter rejects;
	// a small page at an offset must still hold the right rows of the
	// other source, in the unfiltered order, each complete with its
	// snippet.
	for _, route := range []struct{ q, tg, cli string }{{"pagerank", "prTG", "prCLI"}, {"排名", "cjkTG", "cjkCLI"}} {
		t.Run("a ranked page under a filter that rejects the best rows, query "+route.q, func(t *testing.T) {
			c := c.on(t)
			all := c.search(route.q, sessiondb.SearchOptions{Limit: 100})
			var cli []sessiondb.SearchHit
			for _, h := range all {
				if h.Source == "cli" {
					cli = append(cli, h)
				}
			}
			if len(all) != rejected+kept || len(cli) != kept {
				t.Fatalf("%d hits, %d of them cli; want %d, %d", len(all), len(cli), rejected+kept, kept)
			}
			if !s.opts.RankOrderDiffers {
				sameSet(t, "the best-ranked rows", c.hitNames(all[:rejected]), seq(route.tg, 0, rejected, 1))
				equal(t, "the cli rows in rank order (shortest first)", c.hitNames(cli), seq(route.cli, 0, kept, 1))
			}
			for _, o := range []sessiondb.SearchOptions{
				{Sources: []string{"cli"}, Limit: 3, Offset: 2},
				{ExcludeSources: []string{"telegram"}, Limit: 3, Offset: 2},
				{Roles: []string{"user"}, Limit: 3, Offset: 2},
				{Sources: []string{"cli"}, Limit: 2, Offset: kept - 1},
				{Sources: []string{"cli"}, Limit: 1},
				{Sources: []string{"cli"}, Roles: []string{"user"}, Limit: 2, Offset: 1},
			} {
				got := c.search(route.q, o)
				want := cli[min(o.Offset, len(cli)):min(o.Offset+o.Limit, len(cli))]
				if !slices.Equal(c.hitNames(got), c.hitNames(want)) {
					t.Errorf("%+v: %v, want %v (the cli rows of the unfiltered order)", o, c.hitNames(got), c.hitNames(want))
					continue
				}
				for i, h := range got {
					if h.Snippet == nil || !strings.Contains(*h.Snippet, ">>>") || *h.Snippet != str(want[i].Snippet) {
						t.Errorf("%+v: hit %s snippet %q, want %q as unfiltered, marked", o, c.names[h.ID], str(h.Snippet), str(want[i].Snippet))
					}
					c.complete(t, h)
				}
			}
		})
	}

	t.Run("empty and operator-only queries give no hits", func(t *testing.T) {
		for _, q := range []string{"", "   ", "\t\n", "***", "*", `""`, `" "`, "AND", "OR", "NOT", "AND OR NOT", "NOT NOT"} {
			hits, err := c.Search(t.Context(), q, sessiondb.SearchOptions{})
			if err != nil || hits == nil || len(hits) != 0 {
				t.Errorf("Search(%q) = %v, %v; want an empty list", q, c.hitNames(hits), err)
			}
		}
	})

	t.Run("malicious queries neither fail nor harm", func(t *testing.T) {
		for _, q := range []string{`(docker`, `docker)`, `col:docker`, `content:docker`, `docker NEAR/2 compose`, `NEAR(docker compose)`,
			`'; DROP TABLE messages; --`, `"; DELETE FROM sessions; --`, "\x00", "a\x00b", "\x00json:docker", "\xff\xfe", "\xed\xa0\x80",
			`%`, `_`, `100%`, `%docker%`, `_ocker`, `\`, `'`, `{test}`, `^docker`, `-docker`, `docker*"`, `"docker"*`, `🚀`,
			`"项目`, `项目 AND`, `OR 项目`, `%项目%`, `_项目_`, strings.Repeat("(", 5000), strings.Repeat("docker ", 2000), strings.Repeat("署 ", 1000)} {
			hits, err := c.Search(t.Context(), q, sessiondb.SearchOptions{})
			if err != nil || hits == nil {
				t.Errorf("Search(%.40q) = %v, %v (code %q); want a list", q, c.hitNames(hits), err, sessiondb.ErrorCode(err))
			}
		}
		for _, q := range []string{`(docker`, `docker)`, `^docker`, `docker;`, `%docker%`} {
			if got := c.hitNames(c.on(t).search(q, sessiondb.SearchOptions{})); !slices.Equal(slices.Sorted(slices.Values(got)), docker) {
				t.Errorf("Search(%q) = %v, want %v", q, got, docker)
			}
		}
		for _, q := range []string{`col:docker`, `content:docker`} {
			if got := c.hitNames(c.on(t).search(q, sessiondb.SearchOptions{})); len(got) != 0 {
				t.Errorf("Search(%q) = %v, want none", q, got)
			}
		}
		if got := c.on(t).search("docker", sessiondb.SearchOptions{}); len(got) != len(docker) {
			t.Errorf("docker after the malicious queries: %d hits, want %d", len(got), len(docker))
		}
	})

	t.Run("more than MaxQueryTerms terms is invalid", func(t *testing.T) {
		words := func(n int) string {
			w := make([]string, n)
			for i := range w {
				w[i] = fmt.Sprintf("term%02d", i)
			}
			return strings.Join(w, " ")
		}
		if _, err := c.Search(t.Context(), words(sessiondb.MaxQueryTerms), sessiondb.SearchOptions{}); err != nil {
			t.Errorf("%d terms: %v, want no error", sessiondb.MaxQueryTerms, err)
		}
		for _, q := range []string{words(sessiondb.MaxQueryTerms + 1), strings.ReplaceAll(words(sessiondb.MaxQueryTerms+1), " ", " OR ")} {
			hits, err := c.Search(t.Context(), q, sessiondb.SearchOptions{})
			wantCode(t, err, sessiondb.EINVALID)
			if len(hits) != 0 {
				t.Errorf("%d hits with the error", len(hits))
			}
		}
		// repeats count once
		if _, err := c.Search(t.Context(), strings.Repeat("docker ", sessiondb.MaxQueryTerms+10), sessiondb.SearchOptions{}); err != nil {
			t.Errorf("a repeated word: %v, want no error", err)
		}
	})

	t.Run("a search past its deadline is stopped with ETIMEOUT", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		for _, q := range []string{"docker", "部署", "署", "youer"} {
			hits, err := c.Search(ctx, q, sessiondb.SearchOptions{})
			wantCode(t, err, sessiondb.ETIMEOUT)
			if len(hits) != 0 {
				t.Errorf("Search(%q): %d hits with the error", q, len(hits))
			}
		}
	})

	t.Run("fields select what a hit carries", func(t *testing.T) {
		c := c.on(t)
		hits := c.search("ctxmarker", sessiondb.SearchOptions{Fields: []string{"id", "snippet"}})
		if len(hits) != 1 || hits[0].ID != c.ids["ctx2"] || hits[0].Snippet == nil || hits[0].Context != nil {
			t.Errorf("fields id, snippet: %+v, want ctx2 with a snippet and no context", hits)
		}
		hits = c.search("ctxmarker", sessiondb.SearchOptions{Fields: []string{"context"}})
		if len(hits) != 1 || len(hits[0].Context) != 3 {
			t.Errorf("fields context: %+v, want one hit with its 3 context messages", hits)
		}
	})

	t.Run("an unknown hit field is invalid", func(t *testing.T) {
		_, err := c.Search(t.Context(), "docker", sessiondb.SearchOptions{Fields: []string{"id", "bogus"}})
		wantCode(t, err, sessiondb.EINVALID)
	})
}
