package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sessiondb/sessiondb"
)

func newCompletionCommand() *command {
	return &command{
		name:     "completion",
		synopsis: "print a shell completion script (bash, zsh or fish)",
		usage: `Usage: sessiondb completion bash|zsh|fish

Prints a script that completes sessiondb's commands, their options, and
session ids and titles (read from the database when you press Tab).

Examples:
  source <(sessiondb completion bash)            # bash, e.g. in ~/.bashrc
  sessiondb completion zsh > "${fpath[1]}/_sessiondb"
  sessiondb completion fish > ~/.config/fish/completions/sessiondb.fish
`,
		run: func(ctx context.Context, e *env, args []string) error {
			shell, err := oneArg(args, "SHELL (bash, zsh or fish)")
			if err != nil {
				return err
			}
			switch shell {
			case "bash":
				return writeBash(e.stdout)
			case "zsh":
				return writeZsh(e.stdout)
			case "fish":
				return writeFish(e.stdout)
			}
			return usagef("unknown shell %q: want bash, zsh or fish", shell)
		},
	}
}

// commandFlags returns every command with its flag names, sorted.
func commandFlags() map[string][]string {
	out := map[string][]string{}
	for name, mk := range commands {
		cmd := mk()
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		globalFlags(fs, &env{})
		if cmd.flags != nil {
			cmd.flags(fs)
		}
		var flags []string
		fs.VisitAll(func(f *flag.Flag) { flags = append(flags, "--"+f.Name) })
		sort.Strings(flags)
		out[name] = flags
	}
	return out
}

func commandNames() []string {
	names := sortedKeys(commands)
	return append(names, "help")
}

// sessionCommands take a SESSION argument, completed from the database.
var sessionCommands = []string{"show", "append", "end", "reopen", "rename", "lineage", "delete", "archive", "unarchive", "pin", "unpin", "clear"}

func writeBash(w io.Writer) error {
	var cases strings.Builder
	flags := commandFlags()
	for _, n := range sortedKeys(flags) {
		fmt.Fprintf(&cases, "    %s) opts=%q ;;\n", n, strings.Join(flags[n], " "))
	}
	_, err := fmt.Fprintf(w, `# bash completion for sessiondb
_sessiondb() {
  local cur cmd i opts
  cur="${COMP_WORDS[COMP_CWORD]}"
  cmd=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in
      --db|--color|--connect-timeout) ((i++)) ;;
      -*) ;;
      *) cmd="${COMP_WORDS[i]}"; break ;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
    return
  fi
  case "$cmd" in
%s    *) opts="" ;;
  esac
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  elif [[ " %s " == *" $cmd "* ]]; then
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$(sessiondb __complete sessions 2>/dev/null)" -- "$cur"))
  fi
}
complete -o default -F _sessiondb sessiondb
`, strings.Join(commandNames(), " "), cases.String(), strings.Join(sessionCommands, " "))
	return err
}

func writeZsh(w io.Writer) error {
	var cmds, cases strings.Builder
	for _, n := range sortedKeys(commands) {
		fmt.Fprintf(&cmds, "    %q\n", n+":"+strings.ReplaceAll(commands[n]().synopsis, ":", "\\:"))
	}
	flags := commandFlags()
	for _, n := range sortedKeys(flags) {
		fmt.Fprintf(&cases, "      (%s) _values 'option' %s ;;\n", n, quoteAll(flags[n]))
	}
	_, err := fmt.Fprintf(w, `#compdef sessiondb
# zsh completion for sessiondb
_sessiondb() {
  local -a cmds
  cmds=(
%s  )
  if (( CURRENT == 2 )); then
    _describe 'command' cmds
    return
  fi
  local cmd=${words[2]}
  if [[ ${words[CURRENT]} == -* ]]; then
    case $cmd in
%s    esac
    return
  fi
  case " %s " in
    *" $cmd "*)
      local -a sessions
      sessions=("${(@f)$(sessiondb __complete sessions 2>/dev/null)}")
      compadd -a sessions ;;
  esac
}
compdef _sessiondb sessiondb
`, cmds.String(), cases.String(), strings.Join(sessionCommands, " "))
	return err
}

func writeFish(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# fish completion for sessiondb\ncomplete -c sessiondb -f\n")
	for _, n := range sortedKeys(commands) {
		fmt.Fprintf(&b, "complete -c sessiondb -n __fish_use_subcommand -a %s -d %s\n", n, fishQuote(commands[n]().synopsis))
	}
	flags := commandFlags()
	for _, n := range sortedKeys(flags) {
		for _, f := range flags[n] {
			fmt.Fprintf(&b, "complete -c sessiondb -n '__fish_seen_subcommand_from %s' -l %s\n", n, strings.TrimPrefix(f, "--"))
		}
	}
	fmt.Fprintf(&b, "complete -c sessiondb -n '__fish_seen_subcommand_from %s' -a '(sessiondb __complete sessions 2>/dev/null)'\n",
		strings.Join(sessionCommands, " "))
	_, err := io.WriteString(w, b.String())
	return err
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, " ")
}

func fishQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// newCompleteCommand is the hidden helper the completion scripts call:
// `__complete sessions` prints recent session ids and titles, one a line.
func newCompleteCommand() *command {
	return &command{
		name:  "__complete",
		usage: "Usage: sessiondb __complete sessions\n",
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 || args[0] != "sessions" {
				return usagef("__complete sessions")
			}
			db, err := e.openRead(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			rows, _, err := db.ListSessions(ctx, sessiondb.ListOptions{Limit: 200, IncludeArchived: true})
			if err != nil {
				return err
			}
			for _, r := range rows {
				fmt.Fprintln(e.stdout, r.ID)
				if r.Title != nil {
					fmt.Fprintln(e.stdout, *r.Title)
				}
			}
			return nil
		},
	}
}
