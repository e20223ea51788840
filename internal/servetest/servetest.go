// Package servetest builds the sample databases the server's tests (API,
// security and browser) run against: a few sessions in English and
// Chinese, a compression chain with a delegate child, token usage on
// several days and models, and a session of hostile text (XSS).
package servetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
)

// Base is the clock of the sample data: 2026-05-01T09:00:00Z.
var Base = time.Unix(1777626000, 0)

// IDs of the sample sessions.
const (
	Project  = "20260501_090000_aaaaaa" // Chinese text: 项目
	Docker   = "20260502_090000_bbbbbb" // English, tool calls, Markdown
	Root     = "20260503_090000_cccccc" // compressed into Tip
	Tip      = "20260503_100000_dddddd"
	Delegate = "20260503_093000_eeeeee" // a subagent run under Root
	Hostile  = "20260504_090000_ffffff" // the XSS corpus
)

// XSS is hostile message text: each must show as the very characters it is.
var XSS = []string{
	`<script>window.__xss=1</script>`,
	`<img src=x onerror="window.__xss=1">`,
	`[click me](javascript:window.__xss=1) and ![i](javascript:window.__xss=1)`,
	`>>><b onmouseover="window.__xss=1">bold</b><<< inside markers`,
	"bidi \u202egnp.exe\u202c and zero\u200bwidth\u2060 joiners",
	"```html\n<iframe src=\"javascript:window.__xss=1\"></iframe>\n```",
	`<a href="javascript:window.__xss=1">a link</a> &lt;escaped&gt; &amp;`,
	`<svg><script>window.__xss=1</script></svg> "quotes" 'single'`,
}

// Seed writes the sample sessions into store.
func Seed(tb testing.TB, store sessiondb.Store) {
	tb.Helper()
	ctx := context.Background()
	at := func(day, min int) float64 {
		return float64(Base.Add(time.Duration(day)*24*time.Hour + time.Duration(min)*time.Minute).Unix())
	}
	must := func(err error) {
		tb.Helper()
		if err != nil {
			tb.Fatal(err)
		}
	}
	session := func(id, source, model, parent string, day, min int) {
		tb.Helper()
		_, err := store.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: source, Model: model, ParentSessionID: parent,
			StartedAt: at(day, min), ModelConfig: map[bool]string{true: `{"_delegate_from":"` + parent + `"}`}[id == Delegate]})
		must(err)
	}
	msg := func(id, role string, content any, day, min int, extra ...func(*sessiondb.NewMessage)) {
		tb.Helper()
		m := sessiondb.NewMessage{SessionID: id, Role: role, Content: content, Timestamp: at(day, min)}
		for _, f := range extra {
			f(&m)
		}
		_, err := store.AppendMessage(ctx, m)
		must(err)
	}
	usage := func(id, model string, in, out int64, cost float64) {
		tb.Helper()
		must(store.UpdateTokenCounts(ctx, id, sessiondb.TokenUpdate{InputTokens: in, OutputTokens: out, APICallCount: 1,
			EstimatedCostUSD: &cost, Model: model, BillingProvider: "openrouter"}))
	}

	session(Project, "cli", "qwen3-coder", "", 0, 0)
	must(store.SetTitle(ctx, Project, "项目计划"))
	msg(Project, "user", "请帮我整理这个项目的计划，重点是数据库迁移。", 0, 0)
	msg(Project, "assistant", "好的。这个项目分三步：\n\n1. 备份 `state.db`\n2. 运行迁移\n3. 验证搜索\n\n```sql\nSELECT count(*) FROM messages;\n```", 0, 1)
	for i := range 30 {
		msg(Project, "user", fmt.Sprintf("第 %d 个问题：进度如何？", i+1), 0, 2+i)
	}
	msg(Project, "assistant", "项目已经完成了迁移，下一步是上线。", 0, 40)
	usage(Project, "qwen3-coder", 12000, 3400, 0.021)

	session(Docker, "telegram", "claude-sonnet-4", "", 1, 0)
	must(store.SetTitle(ctx, Docker, "Docker compose networking"))
	msg(Docker, "user", "Why can't my **docker compose** services reach each other?", 1, 0)
	msg(Docker, "assistant", "Let me check the compose file.", 1, 1, func(m *sessiondb.NewMessage) {
		m.ToolCalls = []byte(`[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"compose.yaml\"}"}}]`)
		r := "The user probably uses the default bridge network."
		m.Reasoning = &r
	})
	msg(Docker, "tool", "services:\n  web:\n    image: nginx\n  db:\n    image: postgres", 1, 2, func(m *sessiondb.NewMessage) {
		m.ToolCallID, m.ToolName = "call_1", "read_file"
	})
	msg(Docker, "assistant", "Both services share the default network; use the **service name** `db` as the host, not `localhost`.\n\n- web → `db:5432`\n- see [the docs](https://docs.docker.com/compose/networking/)", 1, 3)
	usage(Docker, "claude-sonnet-4", 52000, 8100, 0.31)
	usage(Docker, "claude-haiku-4", 9000, 1200, 0.012)

	session(Root, "cli", "gpt-5", "", 2, 0)
	must(store.SetTitle(ctx, Root, "Refactor the search"))
	msg(Root, "user", "Refactor the search module for CJK.", 2, 0)
	msg(Root, "assistant", "Splitting the tokenizer first.", 2, 5)
	session(Delegate, "cli", "gpt-5-mini", Root, 2, 30)
	msg(Delegate, "user", "Subtask: list the tokenizer tests.", 2, 30)
	msg(Delegate, "assistant", "There are 12 tokenizer tests.", 2, 31)
	must(store.EndSession(ctx, Root, sessiondb.EndReasonCompression))
	session(Tip, "cli", "gpt-5", Root, 2, 60)
	msg(Tip, "user", "[compressed summary] continue the search refactor", 2, 60)
	msg(Tip, "assistant", "Done: bigram routing is in.", 2, 61)
	usage(Root, "gpt-5", 80000, 20000, 0.9)
	usage(Tip, "gpt-5", 30000, 6000, 0.35)
	usage(Delegate, "gpt-5-mini", 5000, 900, 0.004)

	session(Hostile, "discord", "gpt-5", "", 3, 0)
	must(store.SetTitle(ctx, Hostile, `<img src=x onerror="window.__xss=1"> hostile`))
	for i, x := range XSS {
		msg(Hostile, []string{"user", "assistant"}[i%2], x, 3, i)
	}
	usage(Hostile, "gpt-5", 1000, 100, 0.002)
}

// CopyDB copies the database file src (a fixture, a bench database) into a
// temporary directory and returns the copy's path, so a test never writes
// the original.
func CopyDB(tb testing.TB, src string) string {
	tb.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "state.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}
