#!/bin/sh
# One night of cri-harness against this node's containerd, for cron or a systemd timer: the
# conformance suites (failures retried), the benchmarks, the history page over the kept nights,
# and a diff against the previous night whose exit status says whether anything newly fails.
set -u
ENDPOINT=${ENDPOINT:-unix:///run/containerd/containerd.sock}
NIGHTS=${NIGHTS:-/var/lib/cri-harness/nights}
HISTORY=${HISTORY:-/var/lib/cri-harness/history}
KEEP_NIGHTS=${KEEP_NIGHTS:-90}

night="$NIGHTS/$(date -u +%Y-%m-%d)"
previous=$(ls -d "$NIGHTS"/*/ 2>/dev/null | grep -v "^$night/\$" | sort | tail -n 1)
mkdir -p "$night/containerd"

cri-harness run --runtime-endpoint "$ENDPOINT" --report-dir "$night/containerd" --rerun-failed 2
cri-harness bench --runtime-endpoint "$ENDPOINT" --json "$night/containerd/bench.json"

ls -d "$NIGHTS"/*/ | sort | head -n -"$KEEP_NIGHTS" | xargs -r rm -rf
cri-harness report history "$NIGHTS"/*/ --out "$HISTORY"

status=0
if [ -n "$previous" ]; then
    cri-harness report diff "$previous" "$night" || status=$?
fi
exit "$status"
