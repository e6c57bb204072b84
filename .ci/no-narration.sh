#!/usr/bin/env bash
# Fails, printing the offending lines, if a tracked file tells how the project was built instead of
# saying what the software does (who worked on it, in which sitting, in which checkout, in which
# note or issue). A figure names its commit, date, machine and load; a behaviour stands on its own;
# git keeps the history. Each pattern spells one letter as a bracket class (`[i]` matches `i`) so that
# this file does not match itself.
set -euo pipefail
cd "$(dirname "$0")/.."

# Extended regular expressions, matched case-insensitively. Kept narrow enough for protocol text
# ("fetch session", "TLS session", "to lead", host names such as "h1") to pass.
patterns=(
  '\bsess[i]ons? [0-9]'
  '\bsess[i]on-[0-9]'
  "\bsess[i]ons?'s?\b"
  '\b(this|that|previous|earlier|later|next|last|same|whole|each|every) sess[i]ons?\b'
  '\b(other|another|the|a|four|three|two) help[e]rs?\b'
  "\bhelp[e]rs?'"
  "\bh[0-9]{1,2}'s\b"
  '\bs[0-9]+-h[0-9]+\b'
  "\bthe le[a]d('s)?\b|\ble[a]d's\b"
  '\bworktr[e]es?\b'
  '\bclos[i]ng note'
  '\biss[u]es? #[0-9]'
  "\biss[u]e('s| §| [0-9])|\bthe iss[u]e\b"
  '[( ]#[0-9]{1,3}[):]'
  "\bother engine[e]rs?'?"
  '\bmy own\b|\bmy (run|build|kit|tour|criterion|cargo|check|model|mutation)'
)
regex=$(IFS='|'; echo "${patterns[*]}")

# Files that may match: the lock files.
exclude=(':!Cargo.lock' ':!impl/fuzz/Cargo.lock')

if hits=$(git grep -n -I -i -E "$regex" -- . "${exclude[@]}"); then
  echo "no-narration: these lines narrate development; say what the software does, or name the figure's"
  echo "commit, date, machine and load instead:"
  echo "$hits"
  exit 1
fi
echo "no-narration: ok"
