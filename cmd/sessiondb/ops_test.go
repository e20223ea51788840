package main

// CLI tests of the session operations: rename, lineage, list, stats, prune,
// delete, archive/unarchive/pin/unpin and clear, with golden files for the
// human output of list, stats, stats --by model and lineage.
//
// Refresh the golden files with:
//
//	go test -tags sqlite_fts5 ./cmd/sessiondb -run TestOpsGolden -update

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

var opsUpdate = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Every time the CLI prints is rendered in time.Local, and stats --by day
// groups with SQLite's localtime; pin both to UTC before anything formats a
// time, so that the golden files do not depend on the machine's zone.
func init() {
	os.Setenv("TZ", "UTC")
	time.Local = time.UTC
}

// Fixed ids of the golden database.
const (
	opsK8s     = "20260110_090000_a1b2c3" // cli, titled, ended
	opsReport  = "20260111_140000_d4e5f6" // telegram, untitled, long preview
	opsRoot    = "20260112_080000_aaaaaa" // compression root
	opsDel     = "20260112_081500_dddddd" // delegate child of the root
	opsTip     = "20260112_093000_bbbbbb" // compression tip (open)
	opsBranch  = "20260113_100000_cccccc" // branch of the tip
	opsPinned  = "20260114_070000_eeeeee" // cron, pinned
	opsArchive = "20260115_120000_ffffff" // archived
)

func opsTime(s string) float64 {
	t, err := time.Parse("2006-01-02 15:04:05", s)
	if err != nil {
		panic(err)
	}
	return float64(t.Unix())
}

// opsGoldenDB builds the small deterministic database of the golden tests
// and returns its path; every id, title and timestamp is fixed.
func opsGoldenDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	db, err := sqlite.Open(path, sqlite.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	create := func(ns sessiondb.NewSession) {
		t.Helper()
		_, err := db.CreateSession(ctx, ns)
		must(err)
	}
	msgs := func(id string, ms ...sessiondb.NewMessage) {
		t.Helper()
		_, err := db.AppendMessages(ctx, id, ms)
		must(err)
	}
	user := func(text string, ts float64) sessiondb.NewMessage {
		return sessiondb.NewMessage{Role: sessiondb.RoleUser, Content: text, Timestamp: ts}
	}
	assistant := func(text string, ts float64) sessiondb.NewMessage {
		return sessiondb.NewMessage{Role: sessiondb.RoleAssistant, Content: text, Timestamp: ts}
	}
	cost := func(v float64) *float64 { return &v }

	t0 := opsTime("2026-01-10 09:00:00")
	create(sessiondb.NewSession{ID: opsK8s, Source: "cli", Model: "claude-sonnet-4", StartedAt: t0})
	msgs(opsK8s,
		sessiondb.NewMessage{Role: sessiondb.RoleSystem, Content: "You are Hermes.", Timestamp: t0 + 1},
		user("How do I move our docker compose stack to Kubernetes?\nWe run three services.", t0+60),
		assistant("Start with one Deployment per service.", t0+120))
	must(db.SetTitle(ctx, opsK8s, "Kubernetes migration"))
	must(db.UpdateTokenCounts(ctx, opsK8s, sessiondb.TokenUpdate{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 5000,
		APICallCount: 2, Model: "claude-sonnet-4", BillingProvider: "anthropic", EstimatedCostUSD: cost(0.0123)}))
	must(db.EndSession(ctx, opsK8s, "user_exit"))

	t1 := opsTime("2026-01-11 14:00:00")
	create(sessiondb.NewSession{ID: opsReport, Source: "telegram", Model: "gpt-5", StartedAt: t1})
	msgs(opsReport,
		user("Please summarise the quarterly report and list the three biggest risks for the team.", t1+30),
		assistant("Here is the summary.", t1+90))
	must(db.UpdateTokenCounts(ctx, opsReport, sessiondb.TokenUpdate{InputTokens: 800, OutputTokens: 200, APICallCount: 1,
		Model: "gpt-5", BillingProvider: "openai", ActualCostUSD: cost(0.02)}))
	must(db.UpdateTokenCounts(ctx, opsReport, sessiondb.TokenUpdate{InputTokens: 50, OutputTokens: 10, APICallCount: 1,
		Model: "gpt-5-mini", BillingProvider: "openai", Task: "title"}))

	t2 := opsTime("2026-01-12 08:00:00")
	create(sessiondb.NewSession{ID: opsRoot, Source: "cli", Model: "claude-sonnet-4", StartedAt: t2})
	msgs(opsRoot, user("Refactor the auth middleware", t2+10), assistant("Reading the code.", t2+20))
	must(db.SetTitle(ctx, opsRoot, "Refactor auth"))
	must(db.UpdateTokenCounts(ctx, opsRoot, sessiondb.TokenUpdate{InputTokens: 3000, OutputTokens: 900, APICallCount: 3,
		Model: "claude-sonnet-4", BillingProvider: "anthropic", EstimatedCostUSD: cost(0.05)}))
	create(sessiondb.NewSession{ID: opsDel, Source: "cli", ParentSessionID: opsRoot, ModelConfig: `{"_delegate_from":"` + opsRoot + `"}`, StartedAt: opsTime("2026-01-12 08:15:00")})
	msgs(opsDel, user("Find every caller of checkToken", opsTime("2026-01-12 08:15:05")))
	must(db.EndSession(ctx, opsDel, "completed"))
	must(db.EndSession(ctx, opsRoot, sessiondb.EndReasonCompression))
	t3 := opsTime("2026-01-12 09:30:00")
	create(sessiondb.NewSession{ID: opsTip, Source: "cli", Model: "claude-sonnet-4", ParentSessionID: opsRoot, StartedAt: t3})
	msgs(opsTip, user("Continue: split the token checks", t3+10), assistant("Done.", t3+20))
	must(db.SetTitle(ctx, opsTip, "Refactor auth")) // moves from the compression root
	must(db.UpdateTokenCounts(ctx, opsTip, sessiondb.TokenUpdate{InputTokens: 400, OutputTokens: 100, APICallCount: 1,
		Model: "claude-sonnet-4", BillingProvider: "anthropic"}))

	t4 := opsTime("2026-01-13 10:00:00")
	create(sessiondb.NewSession{ID: opsBranch, Source: "cli", ParentSessionID: opsTip, ModelConfig: `{"_branched_from":"` + opsTip + `"}`, StartedAt: t4})
	msgs(opsBranch, user("Try the other approach with middleware chaining", t4+5))
	must(db.SetTitle(ctx, opsBranch, "Refactor auth (alt)"))

	t5 := opsTime("2026-01-14 07:00:00")
	create(sessiondb.NewSession{ID: opsPinned, Source: "cron", StartedAt: t5})
	msgs(opsPinned, user("Nightly backup report", t5+1))
	must(db.SetTitle(ctx, opsPinned, "Nightly backup report"))
	must(db.SetPinned(ctx, opsPinned, true))
	must(db.EndSession(ctx, opsPinned, "cron_complete"))

	t6 := opsTime("2026-01-15 12:00:00")
	create(sessiondb.NewSession{ID: opsArchive, Source: "cli", StartedAt: t6})
	msgs(opsArchive, user("an archived chat", t6+1))
	must(db.SetArchived(ctx, opsArchive, true))
	return path
}

// opsGolden compares got with testdata/name.golden (or rewrites it with
// -update).
func opsGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *opsUpdate {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (refresh with -update if the change is intended)\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestOpsGolden(t *testing.T) {
	db := opsGoldenDB(t)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"list", []string{"list"}},
		{"stats", []string{"stats"}},
		{"stats_by_model", []string{"stats", "--by", "model"}},
		{"lineage", []string{"lineage", opsTip}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opsGolden(t, tt.name, mustCLI(t, db, tt.args...))
		})
	}
}

// opsListJSON runs list --json with extra arguments.
func opsListJSON(t *testing.T, db string, args ...string) (int, []map[string]any) {
	t.Helper()
	var got struct {
		Total    int              `json:"total"`
		Sessions []map[string]any `json:"sessions"`
	}
	out := mustCLI(t, db, append([]string{"list", "--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	return got.Total, got.Sessions
}

func opsIDs(rows []map[string]any) []string {
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r["id"].(string))
	}
	return ids
}

// opsShow returns show --json of a session.
func opsShow(t *testing.T, db, id string) (map[string]any, []any) {
	t.Helper()
	var got struct {
		Session  map[string]any `json:"session"`
		Messages []any          `json:"messages"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "show", id, "--json")), &got); err != nil {
		t.Fatal(err)
	}
	return got.Session, got.Messages
}

// opsWantExit runs the command and checks its exit status and stderr.
func opsWantExit(t *testing.T, db, stdin string, code int, errPart string, args ...string) string {
	t.Helper()
	out, errOut, got := cli(t, db, stdin, args...)
	if got != code || !strings.Contains(errOut, errPart) {
		t.Fatalf("sessiondb %s: exit %d (want %d), stderr %q (want %q)", strings.Join(args, " "), got, code, errOut, errPart)
	}
	return out
}

func TestOpsList(t *testing.T) {
	db := opsGoldenDB(t)
	total, rows := opsListJSON(t, db)
	if want := []string{opsPinned, opsBranch, opsTip, opsReport, opsK8s}; !slices.Equal(opsIDs(rows), want) || total != 5 {
		t.Fatalf("list = %v (total %d), want %v", opsIDs(rows), total, want)
	}
	tip := rows[2]
	if tip["_lineage_root_id"] != opsRoot || tip["preview"] != "Continue: split the token checks" || tip["title"] != "Refactor auth" {
		t.Errorf("projected tip row = %v", tip)
	}
	if rows[4]["preview"] != "How do I move our docker compose stack to Kubernetes? We run..." {
		t.Errorf("preview = %q", rows[4]["preview"])
	}

	if _, rows := opsListJSON(t, db, "--source", "telegram"); !slices.Equal(opsIDs(rows), []string{opsReport}) {
		t.Errorf("--source telegram = %v", opsIDs(rows))
	}
	if _, rows := opsListJSON(t, db, "--exclude-source", "cli", "--exclude-source", "cron"); !slices.Equal(opsIDs(rows), []string{opsReport}) {
		t.Errorf("--exclude-source cli,cron = %v", opsIDs(rows))
	}
	if _, rows := opsListJSON(t, db, "--archived"); !slices.Equal(opsIDs(rows), []string{opsArchive}) {
		t.Errorf("--archived = %v", opsIDs(rows))
	}
	if _, rows := opsListJSON(t, db, "--pinned"); !slices.Equal(opsIDs(rows), []string{opsPinned}) {
		t.Errorf("--pinned = %v", opsIDs(rows))
	}
	total, rows = opsListJSON(t, db, "--all")
	if total != 8 || len(rows) != 8 || !slices.Contains(opsIDs(rows), opsDel) || !slices.Contains(opsIDs(rows), opsRoot) {
		t.Errorf("--all = %v (total %d)", opsIDs(rows), total)
	}
	total, rows = opsListJSON(t, db, "--limit", "2", "--offset", "2")
	if total != 5 || !slices.Equal(opsIDs(rows), []string{opsTip, opsReport}) {
		t.Errorf("--limit 2 --offset 2 = %v (total %d)", opsIDs(rows), total)
	}

	human := mustCLI(t, db, "list", "--limit", "2")
	if !strings.HasSuffix(human, "1–2 of 5 sessions (--offset 2 for more)\n") {
		t.Errorf("paged footer:\n%s", human)
	}
	if !strings.HasPrefix(human, "Title") || !strings.Contains(human, "Preview") || !strings.Contains(human, "Last Active") {
		t.Errorf("header:\n%s", human)
	}
	if full := mustCLI(t, db, "list"); !strings.HasSuffix(full, "5 sessions\n") || !strings.Contains(full, "* Nightly backup report") {
		t.Errorf("full list:\n%s", full)
	}

	opsWantExit(t, db, "", exitUsage, "--limit", "list", "--limit", "0")
	opsWantExit(t, db, "", exitUsage, "--offset", "list", "--offset", "-1")
	opsWantExit(t, db, "", exitUsage, "no arguments", "list", "extra")
}

func TestOpsRename(t *testing.T) {
	db := opsGoldenDB(t)
	if out := mustCLI(t, db, "rename", opsReport, "Quarterly", "report"); out != opsReport+": Quarterly report\n" {
		t.Errorf("rename printed %q", out)
	}
	// by title, with sanitising
	if out := mustCLI(t, db, "rename", "Quarterly report", "  Q1\treport  "); out != opsReport+": Q1 report\n" {
		t.Errorf("rename by title printed %q", out)
	}
	// by unique id prefix
	if out := mustCLI(t, db, "rename", "20260111", "Q1", "risks"); out != opsReport+": Q1 risks\n" {
		t.Errorf("rename by prefix printed %q", out)
	}
	opsWantExit(t, db, "", exitError, "already in use by session "+opsK8s, "rename", opsReport, "Kubernetes", "migration")
	opsWantExit(t, db, "", exitUsage, "Title too long (101 chars, max 100)", "rename", opsReport, strings.Repeat("x", 101))
	opsWantExit(t, db, "", exitNotFound, "nope", "rename", "nope", "title")
	opsWantExit(t, db, "", exitUsage, "missing SESSION", "rename")
	if out := mustCLI(t, db, "rename", opsReport); out != opsReport+": title cleared\n" {
		t.Errorf("clearing printed %q", out)
	}
	if s, _ := opsShow(t, db, opsReport); s["title"] != nil {
		t.Errorf("title after clearing = %v", s["title"])
	}
	// the latest numbered title wins when resolving
	mustCLI(t, db, "rename", opsK8s, "proj")
	mustCLI(t, db, "rename", opsReport, "proj", "#2")
	if out := mustCLI(t, db, "rename", "proj", "proj", "#3"); out != opsReport+": proj #3\n" {
		t.Errorf("rename of the latest proj #N printed %q", out)
	}
}

func TestOpsLineage(t *testing.T) {
	db := opsGoldenDB(t)
	var tree sessiondb.LineageNode
	if err := json.Unmarshal([]byte(mustCLI(t, db, "lineage", opsBranch, "--json")), &tree); err != nil {
		t.Fatal(err)
	}
	if tree.ID != opsRoot || tree.Kind != "root" || len(tree.Children) != 2 {
		t.Fatalf("tree = %+v", tree)
	}
	if c := tree.Children[0]; c.ID != opsDel || c.Kind != "delegate" {
		t.Errorf("first child = %+v", c)
	}
	tip := tree.Children[1]
	if tip.ID != opsTip || tip.Kind != "compression" || len(tip.Children) != 1 || tip.Children[0].Kind != "branch" {
		t.Errorf("tip = %+v", tip)
	}
	if out := mustCLI(t, db, "lineage", "Refactor auth (alt)"); !strings.Contains(out, opsBranch) || !strings.Contains(out, "←") {
		t.Errorf("lineage by title:\n%s", out)
	}
	opsWantExit(t, db, "", exitNotFound, "nope", "lineage", "nope")
	opsWantExit(t, db, "", exitUsage, "missing SESSION", "lineage")
}

func TestOpsStats(t *testing.T) {
	db := opsGoldenDB(t)
	var total []sessiondb.UsageRow
	if err := json.Unmarshal([]byte(mustCLI(t, db, "stats", "--json")), &total); err != nil {
		t.Fatal(err)
	}
	if len(total) != 1 || total[0].Sessions != 8 || total[0].InputTokens != 5450 || total[0].OutputTokens != 1510 || total[0].APICalls != 8 {
		t.Errorf("stats --json = %+v", total)
	}
	var bySource []sessiondb.UsageRow
	if err := json.Unmarshal([]byte(mustCLI(t, db, "stats", "--by", "source", "--json")), &bySource); err != nil {
		t.Fatal(err)
	}
	if len(bySource) != 3 || bySource[0].Key != "cli" || bySource[1].Key != "telegram" || bySource[2].Key != "cron" {
		t.Errorf("stats --by source = %+v", bySource)
	}
	var byDay []sessiondb.UsageRow
	if err := json.Unmarshal([]byte(mustCLI(t, db, "stats", "--by", "day", "--json")), &byDay); err != nil {
		t.Fatal(err)
	}
	var days []string
	for _, r := range byDay {
		days = append(days, r.Key)
	}
	if want := []string{"2026-01-15", "2026-01-14", "2026-01-13", "2026-01-12", "2026-01-11", "2026-01-10"}; !slices.Equal(days, want) {
		t.Errorf("stats --by day = %v, want %v", days, want)
	}
	if out := mustCLI(t, db, "stats", "--since", "7d", "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("stats --since 7d on January data = %s", out)
	}
	opsWantExit(t, db, "", exitUsage, "--by", "stats", "--by", "week")
	opsWantExit(t, db, "", exitUsage, "no arguments", "stats", "extra")
	opsWantExit(t, db, "", exitUsage, "age", "stats", "--since", "yesterdayish")
}

// opsPruneDB builds sessions relative to the real clock, since prune
// measures --older-than from now.
func opsPruneDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	now := float64(time.Now().Unix())
	for _, s := range []struct {
		id, source string
		age        float64 // days
		end        bool
		pinned     bool
	}{
		{"old-cli", "cli", 200, true, false},
		{"old-tg", "telegram", 150, true, false},
		{"old-open", "cli", 300, false, false},
		{"old-pinned", "cli", 250, true, true},
		{"recent", "cli", 2, true, false},
	} {
		at := now - s.age*86400
		if _, err := db.CreateSession(ctx, sessiondb.NewSession{ID: s.id, Source: s.source, StartedAt: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendMessages(ctx, s.id, []sessiondb.NewMessage{{Role: "user", Content: "hello from " + s.id, Timestamp: at + 1}}); err != nil {
			t.Fatal(err)
		}
		if s.end {
			if err := db.EndSession(ctx, s.id, "user_exit"); err != nil {
				t.Fatal(err)
			}
		}
		if s.pinned {
			if err := db.SetPinned(ctx, s.id, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	return path
}

func opsExists(t *testing.T, db, id string) bool {
	t.Helper()
	_, _, code := cli(t, db, "", "show", id, "--json")
	return code == exitOK
}

func TestOpsPrune(t *testing.T) {
	db := opsPruneDB(t)
	dry := mustCLI(t, db, "prune", "--older-than", "90d", "--dry-run")
	if !strings.Contains(dry, "old-cli") || !strings.Contains(dry, "old-tg") || !strings.HasSuffix(dry, "would delete 2 sessions\n") {
		t.Errorf("--dry-run:\n%s", dry)
	}
	for _, id := range []string{"old-open", "old-pinned", "recent"} {
		if strings.Contains(dry, id) {
			t.Errorf("--dry-run lists %s:\n%s", id, dry)
		}
	}
	for _, id := range []string{"old-cli", "old-tg"} {
		if !opsExists(t, db, id) {
			t.Fatalf("--dry-run deleted %s", id)
		}
	}

	var pinned struct {
		DryRun   bool                       `json:"dry_run"`
		Sessions []sessiondb.PruneCandidate `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "prune", "--older-than", "90d", "--dry-run", "--include-pinned", "--json")), &pinned); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range pinned.Sessions {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if !pinned.DryRun || !slices.Equal(ids, []string{"old-cli", "old-pinned", "old-tg"}) {
		t.Errorf("--include-pinned --dry-run --json = %+v", pinned)
	}

	// not a terminal and no --yes: refuse, delete nothing
	opsWantExit(t, db, "y\n", exitUsage, "--yes", "prune", "--older-than", "90d")
	if !opsExists(t, db, "old-cli") {
		t.Fatal("a refused prune deleted old-cli")
	}

	var tg struct {
		Sessions []sessiondb.PruneCandidate `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "prune", "--older-than", "90d", "--source", "telegram", "--yes", "--json")), &tg); err != nil {
		t.Fatal(err)
	}
	if len(tg.Sessions) != 1 || tg.Sessions[0].ID != "old-tg" || opsExists(t, db, "old-tg") {
		t.Errorf("--source telegram --yes = %+v", tg.Sessions)
	}

	out := mustCLI(t, db, "prune", "--older-than", "90d", "--yes")
	if !strings.Contains(out, "old-cli") || !strings.HasSuffix(out, "deleted 1 sessions\n") {
		t.Errorf("--yes:\n%s", out)
	}
	for id, want := range map[string]bool{"old-cli": false, "old-open": true, "old-pinned": true, "recent": true} {
		if opsExists(t, db, id) != want {
			t.Errorf("%s exists = %v, want %v", id, !want, want)
		}
	}
	if out := mustCLI(t, db, "prune", "--older-than", "90d"); !strings.HasSuffix(out, "0 sessions\n") {
		t.Errorf("nothing left to prune: %q", out)
	}

	opsWantExit(t, db, "", exitUsage, "--older-than is required", "prune")
	opsWantExit(t, db, "", exitUsage, "bogus", "prune", "--older-than", "bogus")
	opsWantExit(t, db, "", exitUsage, "negative", "prune", "--older-than", "-5d")
	opsWantExit(t, db, "", exitUsage, "no arguments", "prune", "--older-than", "90d", "extra")
}

func TestOpsDelete(t *testing.T) {
	db := opsGoldenDB(t)
	// refused without --yes when not interactive
	opsWantExit(t, db, "y\n", exitUsage, "--yes", "delete", opsRoot)
	if !opsExists(t, db, opsRoot) {
		t.Fatal("a refused delete deleted the session")
	}
	out := mustCLI(t, db, "delete", opsRoot, "--yes")
	if out != "deleted 2 sessions: "+opsRoot+", "+opsDel+"\n" {
		t.Errorf("delete printed %q", out)
	}
	if opsExists(t, db, opsRoot) || opsExists(t, db, opsDel) {
		t.Error("root or its delegate survived")
	}
	if s, _ := opsShow(t, db, opsTip); s["parent_session_id"] != nil {
		t.Errorf("continuation parent = %v, want orphaned", s["parent_session_id"])
	}
	if s, _ := opsShow(t, db, opsBranch); s["parent_session_id"] != opsTip {
		t.Errorf("grandchild parent = %v, want untouched", s["parent_session_id"])
	}

	// by title, several at once, JSON
	var got struct {
		Deleted []string `json:"deleted"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, db, "delete", "Kubernetes migration", opsReport, "--yes", "--json")), &got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Deleted, []string{opsK8s, opsReport}) {
		t.Errorf("deleted = %v", got.Deleted)
	}
	opsWantExit(t, db, "", exitNotFound, "nope", "delete", "nope", "--yes")
	opsWantExit(t, db, "", exitUsage, "missing SESSION", "delete", "--yes")
}

func TestOpsDeleteDelegateTwice(t *testing.T) {
	db := opsGoldenDB(t)
	// the delegate is deleted with its parent; naming it too is not an error
	if out := mustCLI(t, db, "delete", opsRoot, opsDel, "--yes"); !strings.HasPrefix(out, "deleted 2 sessions") {
		t.Errorf("delete printed %q", out)
	}
}

func TestOpsFlags(t *testing.T) {
	db := opsGoldenDB(t)
	if out := mustCLI(t, db, "archive", opsTip); out != "archived "+opsTip+"\n" {
		t.Errorf("archive printed %q", out)
	}
	if _, rows := opsListJSON(t, db); slices.Contains(opsIDs(rows), opsTip) {
		t.Error("archived chain still listed")
	}
	if _, rows := opsListJSON(t, db, "--archived"); !slices.Equal(opsIDs(rows), []string{opsArchive, opsTip}) {
		t.Errorf("--archived = %v", opsIDs(rows))
	}
	if s, _ := opsShow(t, db, opsRoot); s["archived"] != 1.0 {
		t.Errorf("root archived = %v, want the whole chain archived", s["archived"])
	}
	if out := mustCLI(t, db, "unarchive", opsRoot, opsArchive); out != "unarchived "+opsRoot+"\nunarchived "+opsArchive+"\n" {
		t.Errorf("unarchive printed %q", out)
	}
	if total, _ := opsListJSON(t, db); total != 6 {
		t.Errorf("after unarchive: %d listed, want 6", total)
	}

	if out := mustCLI(t, db, "pin", "Kubernetes migration"); out != "pinned "+opsK8s+"\n" {
		t.Errorf("pin printed %q", out)
	}
	if _, rows := opsListJSON(t, db, "--pinned"); !slices.Equal(opsIDs(rows), []string{opsPinned, opsK8s}) {
		t.Errorf("--pinned = %v", opsIDs(rows))
	}
	if human := mustCLI(t, db, "list"); !strings.Contains(human, "* Kubernetes migration") {
		t.Errorf("pinned mark missing:\n%s", human)
	}
	if out := mustCLI(t, db, "unpin", opsK8s, opsPinned); out != "unpinned "+opsK8s+"\nunpinned "+opsPinned+"\n" {
		t.Errorf("unpin printed %q", out)
	}
	if _, rows := opsListJSON(t, db, "--pinned"); len(rows) != 0 {
		t.Errorf("--pinned after unpin = %v", opsIDs(rows))
	}
	for _, c := range []string{"archive", "unarchive", "pin", "unpin"} {
		opsWantExit(t, db, "", exitNotFound, "nope", c, "nope")
		opsWantExit(t, db, "", exitUsage, "missing SESSION", c)
	}
}

func TestOpsClear(t *testing.T) {
	db := opsGoldenDB(t)
	opsWantExit(t, db, "", exitUsage, "--yes", "clear", opsK8s)
	if _, msgs := opsShow(t, db, opsK8s); len(msgs) != 3 {
		t.Fatalf("a refused clear left %d messages", len(msgs))
	}
	if out := mustCLI(t, db, "clear", opsK8s, "--yes"); out != "cleared "+opsK8s+": 3 messages deleted\n" {
		t.Errorf("clear printed %q", out)
	}
	s, msgs := opsShow(t, db, opsK8s)
	if len(msgs) != 0 || s["message_count"] != 0.0 || s["title"] != "Kubernetes migration" || s["input_tokens"] != 1200.0 {
		t.Errorf("after clear: %d messages, session %v", len(msgs), s)
	}
	var hits []any
	json.Unmarshal([]byte(mustCLI(t, db, "search", "Kubernetes", "--json")), &hits)
	if len(hits) != 0 {
		t.Errorf("cleared messages still found: %v", hits)
	}
	opsWantExit(t, db, "", exitNotFound, "nope", "clear", "nope", "--yes")
	opsWantExit(t, db, "", exitUsage, "missing SESSION", "clear")
}
