#!/usr/bin/env bash
# The mixed-quorum scenarios against the Kafka controllers of every 4.x release line: for each version given
# (default: 4.0.1 4.1.1 4.2.0 4.3.0 4.4.0), `run.sh --controller-version V --only g,h,i,k,m,n` (the scenarios
# with Kafka controller processes in the quorum besides the TLS one, l). Prints one summary line per version
# and a Markdown table row per version at the end; exit status non-zero iff any version diverged.
# Usage: conformance/kafka/versions.sh [VERSION ...]; SCENARIOS=g,h overrides the scenario list.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scenarios="${SCENARIOS:-g,h,i,k,m,n}"
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(4.0.1 4.1.1 4.2.0 4.3.0 4.4.0)
rows=()
failed=0
for v in "${versions[@]}"; do
    log="$(mktemp "${TMPDIR:-/tmp}/kafka-versions-$v.XXXXXX")"
    start=$(date +%s)
    bash "$here/run.sh" --controller-version "$v" --only "$scenarios" >"$log" 2>&1
    code=$?
    secs=$(( $(date +%s) - start ))
    summary="$(grep '^kafka interop:' "$log" | tail -1)"
    echo "$v: exit $code, ${secs} s: ${summary:-no summary line, see $log}"
    [ "$code" -eq 0 ] || failed=1
    [ "$code" -eq 0 ] && rm -f "$log"
    counts="$(sed -n 's/^kafka interop: \([0-9]*\) scenarios, \([0-9]*\) checks, \([0-9]*\) divergences.*/\1 | \2 | \3/p' <<<"$summary")"
    rows+=("| $v | $scenarios | ${counts:-- | - | -} | $secs |")
done
echo
echo "| Kafka controllers | scenarios | scenarios run | checks | divergences | wall s |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit $failed
