package main

// Tests of the human output's looks: colour (--color, styles), columns by
// display width (Korean, Chinese, Japanese, emoji, combining marks), with
// golden files for the plain and the coloured output. In the coloured
// golden files ESC is written as ␛ so that they read in a diff.
//
// Refresh the golden files with:
//
//	go test -tags sqlite_fts5 ./cmd/sessiondb -run 'TestWidthGolden' -update

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/mattn/go-runewidth"

	"github.com/sessiondb/sessiondb"
	"github.com/sessiondb/sessiondb/sqlite"
)

// The golden files count ambiguous-width characters (…, —, box drawing) as
// one cell, whatever the locale of the machine running the tests.
func init() { cells.EastAsianWidth = false }

// Fixed ids of the width golden database.
const (
	wideKorean   = "20260201_090000_kor001" // Korean title and preview, compression root
	wideTip      = "20260201_100000_kor002" // its continuation, Korean title with emoji
	wideChinese  = "20260202_090000_zho001" // Chinese, source 微信
	wideEmoji    = "20260203_090000_emo001" // emoji: ZWJ family, skin tone, flags
	wideCombine  = "20260204_090000_cmb001" // combining marks (decomposed é, è, ï)
	wideJapanese = "20260205_090000_jpn001" // Japanese, pinned
	wideArchived = "20260206_090000_arc001" // Japanese, archived
)

// widthGoldenDB builds a small deterministic database whose titles,
// previews and sources are double-width, zero-width or multi-code-point
// text, and returns its path.
func widthGoldenDB(t *testing.T) string {
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
	add := func(id, source, parent, title string, start string, msgs ...string) {
		t.Helper()
		t0 := opsTime(start)
		_, err := db.CreateSession(ctx, sessiondb.NewSession{ID: id, Source: source, Model: "gpt-5", ParentSessionID: parent, StartedAt: t0})
		must(err)
		for i, text := range msgs {
			role := sessiondb.RoleUser
			if i%2 == 1 {
				role = sessiondb.RoleAssistant
			}
			_, err := db.AppendMessages(ctx, id, []sessiondb.NewMessage{{Role: role, Content: text, Timestamp: t0 + float64(60*(i+1))}})
			must(err)
		}
		if title != "" {
			must(db.SetTitle(ctx, id, title))
		}
	}
	add(wideKorean, "cli", "", "쿠버네티스 이전 계획", "2026-02-01 09:00:00",
		"도커 컴포즈 스택을 쿠버네티스로 옮기는 방법을 알려 주세요. docker 서비스는 세 개입니다.",
		"서비스마다 Deployment를 하나씩 만드세요.")
	must(db.EndSession(ctx, wideKorean, sessiondb.EndReasonCompression))
	add(wideTip, "cli", wideKorean, "쿠버네티스 이전 🚀 2단계", "2026-02-01 10:00:00", "계속: 인그레스 설정")
	add(wideChinese, "微信", "", "部署项目计划", "2026-02-02 09:00:00",
		"这个项目的部署计划是什么？我们用 docker compose 运行三个服务。", "先为每个服务写一个 Deployment。")
	must(db.EndSession(ctx, wideChinese, "user_exit"))
	add(wideEmoji, "telegram", "", "🚀 Launch plan 🎉", "2026-02-03 09:00:00",
		"Ship it 🚢 with docker 🐳 today 👍🏽 for the 👨‍👩‍👧 team 🇰🇷🇨🇳")
	must(db.EndSession(ctx, wideEmoji, "user_exit"))
	add(wideCombine, "cli", "", "Cafe\u0301 cre\u0300me notes", "2026-02-04 09:00:00",
		"Re\u0301sume\u0301 of the nai\u0308ve docker approach, with a cafe\u0301 break")
	add(wideJapanese, "cron", "", "日本語のメモ", "2026-02-05 09:00:00", "毎晩の docker バックアップ報告")
	must(db.SetPinned(ctx, wideJapanese, true))
	add(wideArchived, "cli", "", "古いチャット", "2026-02-06 09:00:00", "アーカイブされた会話")
	must(db.SetArchived(ctx, wideArchived, true))
	return path
}

// visibleESC writes ESC as ␛, so that a coloured golden file reads in a
// diff.
func visibleESC(s string) string { return strings.ReplaceAll(s, "\x1b", "␛") }

// widthSteps are the commands whose output the width golden files pin.
var widthSteps = []struct {
	name   string
	args   []string
	styled bool // --color=always adds styles
}{
	{"list", []string{"list", "--all"}, true},
	{"stats_by_source", []string{"stats", "--by", "source"}, true},
	{"lineage", []string{"lineage", wideTip}, true},
	{"prune_dry_run", []string{"prune", "--older-than", "2026-02-05", "--dry-run"}, false},
	{"search", []string{"search", "docker", "--sort", "oldest"}, true},
	{"show", []string{"show", wideChinese}, true},
}

// TestWidthGolden pins the plain and the coloured output of the tables and
// transcripts holding wide and zero-width text; the coloured output, its
// escapes removed, is the plain output (without search's markers).
func TestWidthGolden(t *testing.T) {
	db := widthGoldenDB(t)
	for _, st := range widthSteps {
		t.Run(st.name, func(t *testing.T) {
			plain := mustCLI(t, db, st.args...)
			colored := mustCLI(t, db, append([]string{"--color=always"}, st.args...)...)
			opsGolden(t, "width_"+st.name, plain)
			opsGolden(t, "color_"+st.name, visibleESC(colored))
			if strings.Contains(plain, "\x1b") {
				t.Errorf("plain output holds an escape:\n%q", plain)
			}
			if st.styled != strings.Contains(colored, "\x1b[") {
				t.Errorf("--color=always: escapes %v, want %v:\n%s", !st.styled, st.styled, colored)
			}
			unmarked := strings.NewReplacer(markOpen, "", markClose, "").Replace(plain)
			if got := ansi.Strip(colored); got != unmarked {
				t.Errorf("the coloured output laid out differently from the plain one:\n--- stripped\n%s--- plain\n%s", got, unmarked)
			}
		})
	}
}

// columnsAt returns, for each line of a table holding want, the display
// column where want starts. It measures with a Condition of its own, not
// with the code under test.
func columnsAt(t *testing.T, out, want string) []int {
	t.Helper()
	var cols []int
	for line := range strings.Lines(ansi.Strip(out)) {
		if i := strings.Index(line, want); i >= 0 {
			cols = append(cols, testCells.StringWidth(line[:i]))
		}
	}
	return cols
}

// testCells measures display width for the checks, as a terminal does
// outside an East Asian locale.
var testCells = &runewidth.Condition{EastAsianWidth: false}

// TestColumnsLineUp checks the alignment itself, by display width, so that
// it holds whatever the golden files say: the last-active column of list
// starts at one terminal column on every row, as do lineage's kinds and
// stats' and prune's numbers.
func TestColumnsLineUp(t *testing.T) {
	db := widthGoldenDB(t)
	for _, tt := range []struct {
		args []string
		at   string // a text that starts one column on each row
		rows int
	}{
		{[]string{"list", "--all"}, "2026-02-0", 7},
		{[]string{"--color=always", "list", "--all"}, "2026-02-0", 7},
		{[]string{"lineage", wideTip}, "2026-02-01 ", 2},
		{[]string{"prune", "--older-than", "2026-02-05", "--dry-run"}, "last active", 2},
	} {
		out := mustCLI(t, db, tt.args...)
		cols := columnsAt(t, out, tt.at)
		if tt.rows > 0 && len(cols) != tt.rows {
			t.Fatalf("%v: %d rows hold %q, want %d:\n%s", tt.args, len(cols), tt.at, tt.rows, out)
		}
		for _, c := range cols {
			if c != cols[0] {
				t.Errorf("%v: %q starts at columns %v, want one column:\n%s", tt.args, tt.at, cols, out)
				break
			}
		}
	}
	// stats --by source: every line, header included, ends at one column
	// (the numbers and headers align right).
	out := mustCLI(t, db, "--color=always", "stats", "--by", "source")
	var ends []int
	for line := range strings.Lines(ansi.Strip(out)) {
		ends = append(ends, testCells.StringWidth(strings.TrimSuffix(line, "\n")))
	}
	for _, e := range ends {
		if e != ends[0] {
			t.Errorf("stats --by source: lines end at columns %v:\n%s", ends, out)
			break
		}
	}
}

func TestClipAndPad(t *testing.T) {
	for _, tt := range []struct {
		in    string
		n     int
		want  string
		cells int
	}{
		{"short", 10, "short", 5},
		{"exactly ten", 11, "exactly ten", 11},
		{"a longer title here", 10, "a longer …", 10},
		{"쿠버네티스 이전 계획", 10, "쿠버네티…", 9}, // a wide character does not fit in the last cell
		{"部署项目计划", 7, "部署项…", 7},
		{"Cafe\u0301 cre\u0300me", 6, "Cafe\u0301 …", 6}, // the combining mark stays with its letter
		{"👨‍👩‍👧 family", 4, "👨‍👩‍👧 …", 4},                // a ZWJ sequence is one glyph of two cells
		{"line\nbreaks\tand  spaces", 40, "line breaks and spaces", 22},
	} {
		got := clip(tt.in, tt.n)
		if got != tt.want || testCells.StringWidth(got) != tt.cells {
			t.Errorf("clip(%q, %d) = %q (%d cells), want %q (%d cells)", tt.in, tt.n, got, testCells.StringWidth(got), tt.want, tt.cells)
		}
		if p := padRight(got, tt.n); testCells.StringWidth(p) != tt.n {
			t.Errorf("padRight(%q, %d) is %d cells", got, tt.n, testCells.StringWidth(p))
		}
	}
}

func TestUseColor(t *testing.T) {
	for _, tt := range []struct {
		mode          colorMode
		tty           bool
		noColor, term string
		want          bool
	}{
		{colorAuto, true, "", "xterm-256color", true},
		{"", true, "", "xterm", true}, // unset is auto
		{colorAuto, false, "", "xterm", false},
		{colorAuto, true, "1", "xterm", false},
		{colorAuto, true, "", "dumb", false},
		{colorAlways, false, "1", "dumb", true},
		{colorNever, true, "", "xterm", false},
	} {
		if got := useColor(tt.mode, tt.tty, tt.noColor, tt.term); got != tt.want {
			t.Errorf("useColor(%q, tty %v, NO_COLOR %q, TERM %q) = %v, want %v", tt.mode, tt.tty, tt.noColor, tt.term, got, tt.want)
		}
	}
}

func TestStylesMatch(t *testing.T) {
	on, off := styles{on: true}, styles{}
	for _, tt := range []struct{ in, want string }{
		{"use >>>docker<<< compose", "use \x1b[1;31mdocker\x1b[m compose"},
		{">>>a<<< and >>>b<<<", "\x1b[1;31ma\x1b[m and \x1b[1;31mb\x1b[m"},
		{"no match", "no match"},
		{"open >>>only", "open >>>only"},
		{"close<<< only", "close<<< only"},
		{">>><<<", ""}, // an empty match is no text
	} {
		if got := on.match(tt.in); got != tt.want {
			t.Errorf("match(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := off.match(tt.in); got != tt.in {
			t.Errorf("without colour match(%q) = %q, want it unchanged", tt.in, got)
		}
	}
	if got := on.text("tool said \x1b[31mred\x1b[0m"); got != "tool said red" {
		t.Errorf("text kept the escapes of stored text: %q", got)
	}
	if got := off.text("\x1b[31mred"); got != "\x1b[31mred" {
		t.Errorf("without colour text changed stored text: %q", got)
	}
}

// TestColorFlag checks where --color is accepted, that --json never holds
// colour, and that a bad value is a usage error naming the choices.
func TestColorFlag(t *testing.T) {
	db := widthGoldenDB(t)
	for _, args := range [][]string{
		{"--color=always", "search", "docker"},
		{"--color", "always", "search", "docker"},
		{"search", "docker", "--color=always"},
		{"search", "--color", "always", "docker"},
	} {
		if out := mustCLI(t, db, args...); !strings.Contains(out, "\x1b[1;31mdocker\x1b[m") || strings.Contains(out, markOpen) {
			t.Errorf("%v: no highlighted match:\n%s", args, out)
		}
	}
	for _, args := range [][]string{
		{"search", "docker"},
		{"--color=never", "search", "docker"},
		{"--color=always", "search", "docker", "--color=never"}, // the last one wins
		{"--color=always", "search", "docker", "--json"},
		{"--color=always", "show", wideChinese, "--json"},
		{"--color=always", "list", "--json"},
		{"--color=always", "doctor", "--json"},
	} {
		out := mustCLI(t, db, args...)
		if strings.Contains(out, "\x1b") {
			t.Errorf("%v printed an escape:\n%s", args, out)
		}
		if args[len(args)-2] == "docker" && !strings.Contains(out, ">>>docker<<<") {
			t.Errorf("%v lost the match markers:\n%s", args, out)
		}
	}
	if out := mustCLI(t, db, "--color=always", "search", "docker", "--json"); !strings.Contains(out, ">>>docker<<<") {
		t.Errorf("--json lost the match markers:\n%s", out)
	}
	for _, args := range [][]string{{"--color=sometimes", "list"}, {"list", "--color", "yes"}} {
		_, errOut, code := cli(t, db, "", args...)
		if code != exitUsage || !strings.Contains(errOut, "want auto, always or never") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error naming auto, always and never", args, code, errOut)
		}
	}
}

// TestDoctorColors checks doctor's marks: ok in green, and the summary.
func TestDoctorColors(t *testing.T) {
	db := widthGoldenDB(t)
	out := mustCLI(t, db, "--color=always", "doctor")
	if !strings.Contains(out, "\x1b[32mok\x1b[m    ") || !strings.Contains(out, "\x1b[32mhealthy\x1b[m") {
		t.Errorf("doctor --color=always:\n%q", out)
	}
	var b strings.Builder
	printDiagnosis(&b, &sessiondb.Diagnosis{Path: "x.db", Checks: []sessiondb.Check{
		{Name: "journal", Status: sessiondb.CheckWarn, Detail: "DELETE"},
		{Name: "quick_check", Status: sessiondb.CheckFail, Detail: "damaged", Fix: "sessiondb recover"},
	}}, nil, styles{on: true})
	for _, want := range []string{"\x1b[1;33mWARN\x1b[m  journal", "\x1b[1;31mFAIL\x1b[m  quick_check", "fix: \x1b[1msessiondb recover\x1b[m", "\x1b[1;31mPROBLEMS FOUND\x1b[m"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("diagnosis lacks %q:\n%q", want, b.String())
		}
	}
}
