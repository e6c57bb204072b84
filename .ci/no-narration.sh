#!/usr/bin/env bash
# Fails, printing the offending lines, if a tracked file narrates how the project was built instead of
# saying what the software does: working sessions, helpers, leads, worktrees, closing notes, issue numbers
# (a figure names its commit, date, machine and load; a behaviour stands on its own; git keeps the history).
set -euo pipefail
cd "$(dirname "$0")/.."

# Extended regular expressions, matched case-insensitively. Kept narrow enough for protocol text
# ("fetch session", "TLS session", "to lead", host names such as "h1") to pass.
patterns=(
  '\bsessions? [0-9]'                       # "session 8", "sessions 2-7"
  '\bsession-[0-9]'                         # "session-7 run"
  "\bsessions?'s?\b"                        # "session's lead", "sessions' runs"
  '\b(this|that|previous|earlier|later|next|last|same|whole|each|every) sessions?\b'
  '\b(other|another|the|a|four|three|two) helpers?\b'
  "\bhelpers?'"                             # "other helpers' builds"
  "\bh[0-9]{1,2}'s\b"                       # "h16's run"
  '\bs[0-9]+-h[0-9]+\b'                     # branch names such as "s8-h18"
  "\bthe lead('s)?\b|\blead's\b"
  '\bworktrees?\b'
  '\bclosing note'
  '\bissues? #[0-9]'                        # "issue #19", "issues #10/#19"
  "\bissue('s| §| [0-9])|\bthe issue\b"      # "the issue's bounds", "issue §2", "issue 3"
  '[( ]#[0-9]{1,3}[):]'                     # "TLS (#19):", "versions of #13)"
  "\bother engineers?'?"                    # "other engineers' builds"
  '\bmy own\b|\bmy (run|build|kit|tour|criterion|cargo|check|model|mutation)'
)
regex=$(IFS='|'; echo "${patterns[*]}")

# Files that may match: the lock file, and this script (it spells out the patterns).
exclude=(':!Cargo.lock' ':!impl/fuzz/Cargo.lock' ':!.ci/no-narration.sh')

if hits=$(git grep -n -I -i -E "$regex" -- . "${exclude[@]}"); then
  echo "no-narration: these lines narrate development; say what the software does, or name the figure's"
  echo "commit, date, machine and load instead:"
  echo "$hits"
  exit 1
fi
echo "no-narration: ok"
