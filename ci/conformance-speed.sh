#!/usr/bin/env bash
# Prints how long a conformance part takes on a runtime at --parallel 2, next to critest
# v1.26.1's time for the same specs on this machine kind, and where the time goes.
#   part 1: critest's first half (runtime info, sandboxes, containers, images, logs, stats,
#           exec, networking), the cases tagged `core`;
#   part 2: the security contract (35 Security Context and 3 Mount Propagation specs), the
#           cases tagged `security`.
# A benchmark that prints figures, not a test: it fails only if a case fails.
#
# Usage: ci/conformance-speed.sh [RUNS] [PART]   (CONTAINER_RUNTIME_ENDPOINT set, as root)
# Environment: CRIH_BIN (default target/release/cri-harness), CRIH_PARALLEL (default 2),
#   CRIH_KNOWN (findings files, default findings/).
set -euo pipefail

RUNS="${1:-3}"
PART="${2:-1}"
BIN="${CRIH_BIN:-target/release/cri-harness}"
PARALLEL="${CRIH_PARALLEL:-2}"
# The runtime's known findings (a listed failure is `known`, not a failure of the figures).
KNOWN="${CRIH_KNOWN:-findings}"
: "${CONTAINER_RUNTIME_ENDPOINT:?set it (ci/containerd.sh up prints it)}"
# critest v1.26.1 here, summed over the part's specs at one process (the specs file); at
# -parallel=2 its whole run takes 41 s against 82.6 s at one, so the part takes that share.
case "$PART" in
1) AREAS='^\| (Container runtime|Image Manager|Multiple Containers [^|]*should support (container log|network)|Networking|PodSandbox|Runtime info)'
   TAGS=core CRITEST_ONE=30.0 CRITEST_TWO=14.9 SPECS=36 ;;
2) AREAS='^\| (Security Context|Container Mount Propagation) '
   TAGS=security CRITEST_ONE=41.7 CRITEST_TWO=20.7 SPECS=38 ;;
*) echo "conformance-speed: PART is 1 or 2, not $PART" >&2; exit 2 ;;
esac

# The cases that mirror the part's specs, as the README's critest table names them.
mirrors="$(sed -n '/<!-- critest table/,/<!-- end of critest table/p' README.md |
    grep -E "$AREAS" | grep -o '`conformance-[a-z-]*/[a-z0-9-]*`' | tr -d '`' | sort -u | paste -sd'|')"
[[ -n "$mirrors" ]] || { echo "conformance-speed: no part $PART rows in README.md's critest table" >&2; exit 1; }

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# `set` mirrors: the cases that mirror critest's specs; `set` core: every case of the part.
measure() {
    local name="$1"
    shift
    for ((i = 1; i <= RUNS; i++)); do
        start=$(date +%s.%N)
        "$BIN" run -r "$CONTAINER_RUNTIME_ENDPOINT" --tags "$TAGS" --parallel "$PARALLEL" \
            --known "$KNOWN" "$@" \
            --report-dir "$out/$name$i" >"$out/$name$i.log" 2>&1 || {
            cat "$out/$name$i.log"
            echo "conformance-speed: run $i had failures" >&2
            exit 1
        }
        end=$(date +%s.%N)
        echo "$start $end" >"$out/$name$i.time"
    done
}
measure mirrors --focus "^($mirrors)\$"
measure core

for name in mirrors core; do
python3 - "$out" "$RUNS" "$PARALLEL" "$CRITEST_ONE" "$CRITEST_TWO" "$name" "$PART" "$SPECS" "$TAGS" <<'PY'
import json, statistics, sys
out, runs, parallel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
critest_one, critest_two = float(sys.argv[4]), float(sys.argv[5])
name, part, specs, tags = sys.argv[6], sys.argv[7], sys.argv[8], sys.argv[9]
walls, cases = [], {}
for i in range(1, runs + 1):
    start, end = map(float, open(f"{out}/{name}{i}.time").read().split())
    walls.append(end - start)
    report = json.load(open(f"{out}/{name}{i}/results.json"))
    for case in report["cases"]:
        if case["outcome"] == "passed":
            cases.setdefault(f'{case["suite"]}/{case["case"]}', []).append(case["duration"])
wall = statistics.median(walls)
busy = sum(statistics.median(d) for d in cases.values())
title = {"mirrors": f"part {part}: cases mirroring critest's {specs} specs", "core": f"part {part}: every case tagged {tags}"}[name]
print(f"{title}: {len(cases)} passing cases, --parallel {parallel}, {runs} runs")
print(f"  wall time: median {wall:.2f} s (runs: {', '.join(f'{w:.2f}' for w in walls)})")
print(f"  case time: {busy:.2f} s summed over cases (one process would need about that)")
print(f"  critest v1.26.1, same specs: {critest_one:.1f} s at one process, about {critest_two:.1f} s at -parallel=2")
if name == "mirrors":
    print(f"  ratio to critest at two: {wall / critest_two:.2f} (target: at most 0.50)")
print("  slowest cases (median seconds):")
for name, d in sorted(cases.items(), key=lambda kv: -statistics.median(kv[1]))[:10]:
    print(f"    {statistics.median(d):6.3f}  {name}")
by_suite = {}
for name, d in cases.items():
    by_suite.setdefault(name.split("/")[0], []).append(statistics.median(d))
print("  by suite (summed case seconds):")
for suite, d in sorted(by_suite.items(), key=lambda kv: -sum(kv[1])):
    print(f"    {sum(d):6.2f}  {suite} ({len(d)} cases)")
PY
done
