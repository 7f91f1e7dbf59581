#!/usr/bin/env bash
# Where a conformance set's time goes at --parallel 2 on a runtime, case by case, and how long
# critest takes for the same specs on the same machine in the same run (alternating, so both
# see the same load). No ratio is ever taken against a figure from another day.
#   core:      runtime info, sandboxes, containers, images, idempotence, logs, stats, OOM,
#              read-only mounts, networking, multiple containers' log and network;
#   security:  Security Context, Mount Propagation, AppArmor;
#   streaming: the Streaming specs and multiple containers' exec.
# A set's cases are those docs/critest.md names for its specs ("mirrors"). For each it prints
# each case's median wall time and its share of the set, the critical path of the two workers,
# and the time spent in CRI calls against the time spent waiting (polls, retries, sleeps).
# A benchmark that prints figures, not a test of speed. It fails when a harness case fails, and
# when critest did not run what it was asked to: its JUnit report must hold every spec of the
# set as run (passed, failed, or skipped by the spec itself) and no other, and each spec it
# failed must be one whose mirror case the harness reports as a listed finding (known) or
# cannot run here either (skipped: the internet, a kernel feature). No ratio is printed then.
# Exit status: 1 when a harness case failed or critest did not run the set's specs; 3 when
# critest ran them and failed one that no finding explains (critest v1.36.0's own specs flake
# here: its pull-timeout spec at 2 workers, its OOM spec at 3 and more, each now and then).
#
# Usage: ci/conformance-speed.sh [RUNS] [SET]   (CONTAINER_RUNTIME_ENDPOINT set, as root)
# The harness runs with --share-sandboxes: its cases that only need a home for their containers
# share READY sandboxes, one case at a time each (CRIH_SHARE_SANDBOXES=0 times it without).
# Environment: CRIH_BIN (default target/release/cri-harness), CRIH_PARALLEL (default 2, both
#   tools), CRITEST_PARALLEL (critest's own workers, default CRIH_PARALLEL: each tool at its
#   best count, side by side), CRIH_KNOWN (findings, default findings/), CRITEST (a critest
#   v1.36.0 binary; default ../shared/bin/critest-v1.36.0 beside the repository when it is
#   there, with the ginkgo beside it put on PATH as `ginkgo` for --parallel; CRITEST=none
#   skips critest),
#   CRITEST_TIMES (a Markdown table `| spec | result | seconds |` of critest's per-spec times,
#   printed beside each case for reference; default ../shared/critest-v1.36.0-specs.md when it
#   exists; never divided by), CRIH_NETNS (the network namespace both tools run in, as
#   ci/containerd.sh names it; default cri-harness when it exists, `host` for none).
set -euo pipefail

RUNS="${1:-3}"
SET="${2:-core}"
BIN="${CRIH_BIN:-target/release/cri-harness}"
PARALLEL="${CRIH_PARALLEL:-2}"
CRITEST_WORKERS="${CRITEST_PARALLEL:-$PARALLEL}"
KNOWN="${CRIH_KNOWN:-findings}"
TIMES="${CRITEST_TIMES:-../shared/critest-v1.36.0-specs.md}"
: "${CONTAINER_RUNTIME_ENDPOINT:?set it (ci/containerd.sh up prints it)}"
case "$SET" in
core) AREAS='^(Runtime info|PodSandbox runtime|Container runtime|Container OOM|Container Mount Readonly|Idempotence|Image (Manager|Consistency|Identifier)|Networking|Multiple Containers .*should support (container log|network))' ;;
security) AREAS='^(Security Context|Container Mount Propagation|AppArmor)' ;;
streaming) AREAS='^(Streaming|Multiple Containers .*should support container exec)' ;;
*) echo "conformance-speed: SET is core, security or streaming, not $SET" >&2; exit 2 ;;
esac

# The set's specs and the cases docs/critest.md names for them, one `spec<TAB>case,case` a line.
rows="$(sed -n '/<!-- critest v1.36.0 table/,/<!-- end of critest v1.36.0 table/p' docs/critest.md |
    grep '^| ' | grep -v '^| critest\|^|---\|cri-harness bench' |
    sed -e 's/\\|/\x01/g' -e 's/^| //' -e 's/ |$//' -e 's/ | /\t/' -e 's/\x01/|/g' -e 's/`//g' |
    grep -E "$AREAS" | grep -v $'\t-$' || true)"
[[ -n "$rows" ]] || { echo "conformance-speed: no $SET rows in docs/critest.md" >&2; exit 1; }
mirrors="$(cut -f2 <<<"$rows" | tr ',' '\n' | tr -d ' ' | sort -u | paste -sd'|')"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
printf '%s\n' "$rows" >"$out/rows.tsv"

# critest: the one named, else the one shared beside the repository. critest's --parallel runs
# `ginkgo` from PATH, so a ginkgo-VERSION beside it is linked there under that name.
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${CRITEST:-}" && -x "$REPO/../shared/bin/critest-v1.36.0" ]]; then
    CRITEST="$REPO/../shared/bin/critest-v1.36.0"
fi
[[ "${CRITEST:-}" != none ]] || CRITEST=""
if [[ -n "${CRITEST:-}" ]] && ! command -v ginkgo >/dev/null; then
    ginkgo_beside="$(find "$(dirname "$CRITEST")" -maxdepth 1 -name 'ginkgo*' -type f -perm -u+x | sort | tail -n 1)"
    if [[ -n "$ginkgo_beside" ]]; then
        mkdir -p "$out/bin" && ln -s "$ginkgo_beside" "$out/bin/ginkgo"
        PATH="$out/bin:$PATH"
    fi
fi
# Both tools run in the lane's network namespace when there is one (ci/containerd.sh's
# CRIH_NETNS, default cri-harness): the pods' addresses are routed there and nowhere else, so
# critest's HTTP checks of a pod's port reach the pod, not the machine's default route.
SHARE=()
if [[ "${CRIH_SHARE_SANDBOXES:-1}" == 1 ]]; then SHARE=(--share-sandboxes); fi
NETNS="${CRIH_NETNS:-cri-harness}"
IN_NS=()
if [[ "$NETNS" != host && -e "/var/run/netns/$NETNS" ]]; then
    IN_NS=(nsenter "--net=/var/run/netns/$NETNS" --)
fi
harness() {
    local i="$1" start end
    start=$(date +%s.%N)
    "${IN_NS[@]}" "$BIN" run -r "$CONTAINER_RUNTIME_ENDPOINT" --parallel "$PARALLEL" --known "$KNOWN" "${SHARE[@]}" \
        --focus "^($mirrors)\$" --report-dir "$out/run$i" >"$out/run$i.log" 2>&1 || {
        cat "$out/run$i.log"
        echo "conformance-speed: run $i had failures" >&2
        exit 1
    }
    end=$(date +%s.%N)
    echo "$start $end" >"$out/run$i.time"
}
critest() {
    local i="$1" start end focus status=0
    # ginkgo matches its focus against the suite's name and each spec's full text, which starts
    # at `[k8s.io] `: the specs, regex-quoted, anchored at that prefix and at the end. A spec's
    # ` [Serial]` is a ginkgo label its report adds, not part of its text, so it is dropped.
    focus="$(cut -f1 "$out/rows.tsv" | sed -e 's/ \[Serial\]$//' -e 's/[][\.|$^*+?(){}]/\\&/g' | paste -sd'|')"
    # At one worker critest runs its specs in order by itself: its --parallel 1 would ask go
    # test's -parallel, which ginkgo refuses to run under.
    local workers=()
    if ((CRITEST_WORKERS > 1)); then workers=(--parallel "$CRITEST_WORKERS"); fi
    start=$(date +%s.%N)
    "${IN_NS[@]}" "$CRITEST" --runtime-endpoint "$CONTAINER_RUNTIME_ENDPOINT" "${workers[@]}" \
        --ginkgo.no-color --ginkgo.junit-report "$out/critest$i.xml" \
        --ginkgo.focus "\\[k8s\\.io\\] ($focus)\$" >"$out/critest$i.log" 2>&1 || status=$?
    end=$(date +%s.%N)
    echo "$start $end" >"$out/critest$i.time"
    echo "$status" >"$out/critest$i.status"
    # What it ran, checked at once: a critest that ran other specs times nothing comparable.
    python3 "$REPO/ci/critest-check.py" ran "$out" "$i" || {
        tail -n 20 "$out/critest$i.log" >&2
        echo "conformance-speed: critest did not run the $SET set's specs; no ratio" >&2
        exit 1
    }
}
for ((i = 1; i <= RUNS; i++)); do
    if [[ -n "${CRITEST:-}" ]]; then critest "$i"; fi
    harness "$i"
    if [[ -n "${CRITEST:-}" ]]; then
        # critest's failures, each held to the harness's verdict on the spec's mirror cases.
        python3 "$REPO/ci/critest-check.py" failures "$out" "$i" || {
            echo "conformance-speed: critest failed for a reason no listed finding gives; no ratio" >&2
            exit 3
        }
    fi
done

python3 - "$out" "$RUNS" "$PARALLEL" "$SET" "$TIMES" "$CRITEST_WORKERS" "${SHARE[*]}" <<'PY'
import json, os, statistics, sys
out, runs, parallel, set_name, times_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
critest_workers = int(sys.argv[6])
share = f" {sys.argv[7]}" if sys.argv[7] else ""
rows = [line.rstrip("\n").split("\t") for line in open(f"{out}/rows.tsv") if line.strip()]
spec_of = {}
for spec, cases in rows:
    for case in cases.split(","):
        spec_of.setdefault(case.strip(), []).append(spec)
critest_seconds = {}
if os.path.exists(times_file):
    for line in open(times_file):
        cells = [c.strip() for c in line.strip().strip("|").replace("\\|", "\x01").split("|")]
        if len(cells) == 3:
            try:
                critest_seconds[cells[0].replace("\x01", "|")] = float(cells[2])
            except ValueError:
                pass

def wall(name, i):
    start, end = map(float, open(f"{out}/{name}{i}.time").read().split())
    return end - start

walls = [wall("run", i) for i in range(1, runs + 1)]
per_case, spent, paths = {}, {"cri": [], "waiting": [], "calls": [], "busy": []}, []
for i in range(1, runs + 1):
    report = json.load(open(f"{out}/run{i}/results.json"))
    cases = [c for c in report["cases"] if c["outcome"] not in ("skipped",)]
    for c in cases:
        d = per_case.setdefault(f'{c["suite"]}/{c["case"]}', {"wall": [], "cri": [], "waiting": [], "outcome": c["outcome"]})
        d["wall"].append(c["duration"])
        d["cri"].append(c["timing"]["cri"])
        d["waiting"].append(c["timing"]["waiting"])
    spent["cri"].append(sum(c["timing"]["cri"] for c in cases))
    spent["waiting"].append(sum(c["timing"]["waiting"] for c in cases))
    spent["calls"].append(sum(c["timing"]["calls"] for c in cases))
    spent["busy"].append(sum(c["duration"] for c in cases))
    # The workers: each case went to the worker that was free when it started, and held it
    # for its steps; its cleanup (removals, the leak check) ran beside the next case.
    workers = [[] for _ in range(parallel)]
    free = [0.0] * parallel
    for c in sorted(cases, key=lambda c: c["timing"]["started"]):
        start = c["timing"]["started"]
        end = start + c["duration"] - c["timing"].get("cleanup", 0.0)
        w = min(range(parallel), key=lambda k: (free[k] > start + 1e-3, free[k]))
        workers[w].append((start, end, f'{c["suite"]}/{c["case"]}'))
        free[w] = max(free[w], end)
    paths.append(max(workers, key=lambda chain: chain[-1][1] if chain else 0.0))

median = statistics.median
busy = median(spent["busy"])
print(f"set {set_name}: {len(per_case)} cases mirroring {len(rows)} critest v1.36.0 specs, --parallel {parallel}{share}, {runs} runs")
print(f"  wall time: median {median(walls):.2f} s (runs: {', '.join(f'{w:.2f}' for w in walls)})")
print(f"  summed case time: {busy:.2f} s; summed over the cases' CRI calls {median(spent['cri']):.2f} s ({median(spent['calls']):.0f} calls; "
      f"a case's concurrent calls each count, so this can pass its wall time), waiting on purpose (polls, retries, sleeps) {median(spent['waiting']):.2f} s")
critest_walls = []
if os.path.exists(f"{out}/critest1.time"):
    critest_walls = [wall("critest", i) for i in range(1, runs + 1)]
    ratio = median(walls) / median(critest_walls)
    print(f"  critest, the same {len(rows)} specs (each run's JUnit report checked: those specs and no other ran), "
          f"same machine, alternating runs, --parallel {critest_workers}: median {median(critest_walls):.2f} s "
          f"(runs: {', '.join(f'{w:.2f}' for w in critest_walls)}); ratio {ratio:.2f} (target: at most 0.40)")
else:
    print("  critest: not run (no critest in CRITEST or ../shared/bin; CRITEST=none was given, or none is there)")
print("  cases by median wall time (share of summed case time; CRI / waiting; critest's recorded time for its spec, for reference):")
for name, d in sorted(per_case.items(), key=lambda kv: -median(kv[1]["wall"])):
    w = median(d["wall"])
    ref = [critest_seconds[s] for s in spec_of.get(name, []) if s in critest_seconds]
    ref_text = f"; critest {ref[0]:.1f} s" if ref else ""
    print(f"    {w:6.3f} s {100 * w / busy:5.1f}%  cri {median(d['cri']):.3f} / wait {median(d['waiting']):.3f}{ref_text}  {name}"
          + ("" if d["outcome"] == "passed" else f" [{d['outcome']}]"))
path = paths[walls.index(median(walls))] if len(walls) % 2 else paths[-1]
print(f"  critical path (the worker that finished last, in the median run; each case's steps, its cleanup overlapping the next): {len(path)} cases, ends at {path[-1][1]:.2f} s")
previous = 0.0
for start, end, name in path:
    gap = start - previous
    print(f"    {start:6.2f} → {end:6.2f} s ({end - start:5.2f} s{', idle ' + format(gap, '.2f') + ' s before' if gap > 0.05 else ''})  {name}")
    previous = end
PY
