#!/usr/bin/env bash
# A private containerd (CRI v1) for the harness's CI and nightly runs, with a local registry
# serving the suites' test images: `up` installs what is missing and starts everything, `down`
# removes what `up` made, `env` prints the endpoint. Nothing is fetched but distribution
# packages, and containerd never reaches a registry off this machine: by default the registry,
# containerd and every pod network live in a network namespace of their own that has only a
# loopback interface, so a misconfigured pull fails locally instead of leaving the machine.
#
# Usage: ci/containerd.sh up|down|env   (as root)
#   stdout of `up` and `env` is one line, CONTAINER_RUNTIME_ENDPOINT=unix://STATE/containerd.sock;
#   progress goes to stderr.
# Environment:
#   CRIH_STATE          state directory (default /tmp/cri-harness-containerd)
#   CRIH_REGISTRY_PORT  registry port on 127.0.0.1 (default 5000)
#   CRIH_NETNS          network namespace to run in (default cri-harness; "host" for none)
#   CRIH_BRIDGE         CNI bridge name (default crih0)
#   CRIH_POD_SUBNET     pod addresses (default 10.88.0.0/16, as the mock runtime's)
#   CRIH_BIN            cri-harness binary (default: cargo build --release, target/release)
#   CRIH_CNI_BIN        CNI plugin directory (default /usr/lib/cni, else /opt/cni/bin)
#   CRIH_SOCKET_UID/GID owner of the CRI socket (default: the sudo caller, else root), so a
#                       non-root test run can reach a containerd started with sudo
#   CRIH_LOG_DIR        `down` copies containerd's and the registry's logs here first
#   CRIH_HANDLERS       extra RuntimeClass handlers, each an OCI runtime binary on PATH run
#                       through the runc v2 shim (default "runsc crun"; "" for none); each is
#                       installed from Debian if missing and named after its binary
set -euo pipefail

STATE="${CRIH_STATE:-/tmp/cri-harness-containerd}"
PORT="${CRIH_REGISTRY_PORT:-5000}"
NETNS="${CRIH_NETNS:-cri-harness}"
BRIDGE="${CRIH_BRIDGE:-crih0}"
SUBNET="${CRIH_POD_SUBNET:-10.88.0.0/16}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOCK="$STATE/containerd.sock"
ENDPOINT="unix://$SOCK"
REGISTRY="127.0.0.1:$PORT"
SOCKET_UID="${CRIH_SOCKET_UID:-${SUDO_UID:-0}}"
SOCKET_GID="${CRIH_SOCKET_GID:-${SUDO_GID:-0}}"
SANDBOX_IMAGE="registry.k8s.io/pause:3.9"
read -r -a HANDLERS <<<"${CRIH_HANDLERS-runsc crun}"
# Registry host namespaces that resolve to the local registry; `_default` catches any other.
MIRRORED_HOSTS=(registry.k8s.io docker.io _default)
CNI_PLUGINS=(bridge host-local portmap loopback)
CNI_NETWORK="cri-harness"
# libcni caches each attachment's result here whatever containerd's config says.
CNI_CACHE="/var/lib/cni/results"

if [[ "$NETNS" == host ]]; then
    NSPATH=""
    IN_NS=()
else
    NSPATH="/var/run/netns/$NETNS"
    # Joins only the network namespace: mounts stay visible to the host, so `down` can see
    # and undo them.
    IN_NS=(nsenter "--net=$NSPATH" --)
fi

log() { printf 'containerd.sh: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# pid from $1 if that process is alive and runs a binary named $2.
live_pid() {
    local pidfile="$1" name="$2" pid
    [[ -f "$pidfile" ]] || return 1
    pid="$(<"$pidfile")"
    [[ "$pid" =~ ^[0-9]+$ && -d "/proc/$pid" ]] || return 1
    [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */"$name" ]] || return 1
    echo "$pid"
}

# Sends TERM to the pid saved in $1 (if it still runs $2), then KILL after $3 seconds.
stop_pid() {
    local pidfile="$1" name="$2" grace="$3" pid
    if pid="$(live_pid "$pidfile" "$name")"; then
        log "stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < grace * 10; i++)); do
            [[ -d "/proc/$pid" ]] || break
            sleep 0.1
        done
        if [[ -d "/proc/$pid" ]]; then
            log "$name (pid $pid) ignored TERM for ${grace}s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            sleep 0.2
        fi
    fi
    rm -f "$pidfile"
}

# Waits until the process started in the background as pid $1 has exec'd binary $2 (nsenter
# runs first), so live_pid does not take the moment before for an exit.
await_exec() {
    local pid="$1" name="$2"
    for ((i = 0; i < 50; i++)); do
        [[ -d "/proc/$pid" ]] || return 0
        [[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" == */"$name" ]] && return 0
        sleep 0.1
    done
}

cni_bin_dir() {
    local dir
    for dir in ${CRIH_CNI_BIN:-} /usr/lib/cni /opt/cni/bin; do
        local complete=1 plugin
        for plugin in "${CNI_PLUGINS[@]}"; do
            [[ -x "$dir/$plugin" ]] || complete=0
        done
        if ((complete)); then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

install_packages() {
    local missing=()
    # Commands rather than package names where another package may provide them (a runner
    # with Docker's containerd.io has containerd and runc, and must keep them).
    command -v containerd >/dev/null || missing+=(containerd)
    command -v ctr >/dev/null || missing+=(containerd)
    command -v runc >/dev/null || missing+=(runc)
    cni_bin_dir >/dev/null || missing+=(containernetworking-plugins)
    dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
        missing+=(busybox-static)
    command -v docker-registry >/dev/null || missing+=(docker-registry)
    command -v skopeo >/dev/null || missing+=(skopeo)
    command -v ip >/dev/null || missing+=(iproute2)
    command -v nsenter >/dev/null || missing+=(util-linux)
    local handler
    for handler in "${HANDLERS[@]}"; do
        command -v "$handler" >/dev/null || missing+=("$handler")
    done
    if ((${#missing[@]})); then
        mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
        log "installing ${missing[*]}"
        apt-get update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" >&2
    fi
}

write_configs() {
    local cni_bin="$1"
    mkdir -p "$STATE"/{root,state,opt,runc,registry,cni/net.d,cni/ipam}
    local handlers="" handler
    for handler in "${HANDLERS[@]}"; do
        # A handler of its own name: the runc v2 shim driving that binary, with its own root
        # so `down` can find what it left.
        handlers+="
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$handler]
        runtime_type = \"io.containerd.runc.v2\"

        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.$handler.options]
          BinaryName = \"$(command -v "$handler")\"
          Root = \"$STATE/$handler\"
          SystemdCgroup = false
"
    done
    cat >"$STATE/config.toml" <<EOF
# Written by ci/containerd.sh: a containerd that shares no path or socket with a system one.
version = 2
root = "$STATE/root"
state = "$STATE/state"

[grpc]
  address = "$SOCK"
  uid = $SOCKET_UID
  gid = $SOCKET_GID

[ttrpc]
  address = "$STATE/containerd-ttrpc.sock"

[debug]
  address = ""
  # debug level logs every registry host containerd tries; up checks them all are local.
  level = "debug"

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$STATE/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$SANDBOX_IMAGE"
    # Without it runc fails to lower its own oom_score_adj in unprivileged VMs.
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          Root = "$STATE/runc"
          SystemdCgroup = false
$handlers
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$cni_bin"
      conf_dir = "$STATE/cni/net.d"
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$STATE/certs.d"
EOF

    # isGateway true gives the bridge the range's first address, so the node (the namespace
    # containerd runs in) reaches pod IPs and host ports, as the networking cases need; pods
    # get no default route and the namespace has no link out, so nothing leaves the machine.
    cat >"$STATE/cni/net.d/10-cri-harness.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$CNI_NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$SUBNET"}]],
        "dataDir": "$STATE/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF

    local host
    for host in "${MIRRORED_HOSTS[@]}"; do
        mkdir -p "$STATE/certs.d/$host"
        # Both the server and a host table: with a host table alone containerd 1.6 appends the
        # real upstream as the last fallback.
        cat >"$STATE/certs.d/$host/hosts.toml" <<EOF
server = "http://$REGISTRY"

[host."http://$REGISTRY"]
  capabilities = ["pull", "resolve"]
EOF
    done

    cat >"$STATE/registry.yml" <<EOF
version: 0.1
log:
  level: info
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $STATE/registry
  delete:
    enabled: true
http:
  addr: $REGISTRY
EOF
}

ensure_netns() {
    [[ -n "$NSPATH" ]] || return 0
    if [[ ! -e "$NSPATH" ]]; then
        # `ip netns add` makes its directory a mount point on first use; down undoes that
        # only if it was us.
        if ! mountpoint -q /run/netns 2>/dev/null; then
            touch "$STATE/netns-dir-mounted-by-us"
        fi
        log "creating network namespace $NETNS (loopback only)"
        ip netns add "$NETNS"
    fi
    ip -n "$NETNS" link set lo up
}

registry_answers() {
    "${IN_NS[@]}" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
        read -r -t 2 status <&3 || exit 1
        [[ "$status" == *" 200 "* ]]' _ "$PORT" 2>/dev/null
}

start_registry() {
    if live_pid "$STATE/registry.pid" docker-registry >/dev/null; then
        log "registry already running on $REGISTRY"
    else
        if registry_answers; then
            die "something else already answers on $REGISTRY; set CRIH_REGISTRY_PORT"
        fi
        log "starting docker-registry on $REGISTRY"
        "${IN_NS[@]}" docker-registry serve "$STATE/registry.yml" \
            </dev/null >>"$STATE/registry.log" 2>&1 &
        echo $! >"$STATE/registry.pid"
        await_exec $! docker-registry
    fi
    for ((i = 0; i < 100; i++)); do
        registry_answers && return 0
        live_pid "$STATE/registry.pid" docker-registry >/dev/null ||
            die "docker-registry exited; see $STATE/registry.log"
        sleep 0.2
    done
    die "docker-registry did not answer on $REGISTRY within 20 s; see $STATE/registry.log"
}

harness_bin() {
    if [[ -n "${CRIH_BIN:-}" ]]; then
        [[ -x "$CRIH_BIN" ]] || die "CRIH_BIN=$CRIH_BIN is not an executable"
        echo "$CRIH_BIN"
        return
    fi
    if command -v cargo >/dev/null; then
        log "building cri-harness (cargo build --release)"
        (cd "$REPO" && cargo build --release --locked --bin cri-harness >&2)
    fi
    [[ -x "$REPO/target/release/cri-harness" ]] ||
        die "no cri-harness binary: run cargo build --release or set CRIH_BIN"
    echo "$REPO/target/release/cri-harness"
}

push_images() {
    local bin="$1"
    log "pushing the test images to $REGISTRY"
    "${IN_NS[@]}" "$bin" images push --registry "$REGISTRY" >&2
}

start_containerd() {
    if live_pid "$STATE/containerd.pid" containerd >/dev/null; then
        log "containerd already running"
        return 0
    fi
    rm -f "$SOCK"
    log "starting containerd (log: $STATE/containerd.log)"
    "${IN_NS[@]}" containerd --config "$STATE/config.toml" \
        </dev/null >>"$STATE/containerd.log" 2>&1 &
    echo $! >"$STATE/containerd.pid"
    await_exec $! containerd
}

# True once the CRI service answers. `cri-harness version -r` is the real check; a binary
# whose `version` takes no endpoint yet falls back to containerd listing its CRI plugin as ok.
cri_answers() {
    local bin="$1"
    [[ -S "$SOCK" ]] || return 1
    if "$bin" version --help 2>/dev/null | grep -q -- '--runtime-endpoint'; then
        "$bin" version -r "$ENDPOINT" >/dev/null 2>&1
    else
        ctr --address "$SOCK" plugins ls 2>/dev/null |
            grep -qE '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$'
    fi
}

wait_cri() {
    local bin="$1"
    for ((i = 0; i < 300; i++)); do
        cri_answers "$bin" && return 0
        live_pid "$STATE/containerd.pid" containerd >/dev/null ||
            die "containerd exited; see $STATE/containerd.log"
        sleep 0.2
    done
    die "containerd's CRI did not answer within 60 s; see $STATE/containerd.log"
}

# Fails if containerd's log shows a registry host tried other than the local one, or a
# hosts.toml containerd could not use (after which it falls back to the real host).
check_registry_hosts() {
    local logs=() tried
    [[ -f "$STATE/containerd.log" ]] && logs+=("$STATE/containerd.log")
    ((${#logs[@]})) || return 0
    tried="$(cat "${logs[@]}" | grep -oE '(host|url)="?(https?://)?[^"/ ]+' |
        sed -E 's/^(host|url)="?(https?:\/\/)?//' | sort -u |
        grep -vE '^(127\.0\.0\.1|localhost|\[::1\])(:[0-9]+)?$' || true)"
    if [[ -n "$tried" ]]; then
        log "error: containerd tried registry hosts off this machine: $(echo "$tried" | tr '\n' ' ')"
        return 1
    fi
    if cat "${logs[@]}" | grep -iE 'hosts\.toml|hosts dir|host director' | grep -qE 'level=(error|warning)'; then
        log "error: containerd could not use the hosts.toml files; see ${logs[*]}"
        return 1
    fi
}

# Pulls the images every run keeps (pause and busybox) through CRI, as the kubelet would, so a
# wrong mirror setup fails here rather than in the first case; the image cases pull and remove
# the others themselves.
pull_images() {
    local bin="$1"
    log "pulling the test images through CRI"
    "$bin" images pull -r "$ENDPOINT" --timeout 60s >&2 ||
        die "cannot pull the test images from the local registry; see $STATE/containerd.log"
}

cmd_up() {
    local started=$SECONDS
    [[ $EUID -eq 0 ]] || die "run as root (containerd, CNI and network namespaces need it)"
    install_packages
    local cni_bin bin
    cni_bin="$(cni_bin_dir)" || die "no CNI plugin directory with ${CNI_PLUGINS[*]}"
    write_configs "$cni_bin"
    ensure_netns
    bin="$(harness_bin)"
    start_registry
    push_images "$bin"
    start_containerd
    wait_cri "$bin"
    pull_images "$bin"
    check_registry_hosts || die "registry resolution is not hermetic"
    log "up in $((SECONDS - started)) s; endpoint $ENDPOINT"
    echo "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT"
}

remove_pods() {
    live_pid "$STATE/containerd.pid" containerd >/dev/null || return 0
    [[ -S "$SOCK" ]] || return 0
    local bin out id
    # The harness's own cleanup first: through CRI, so CNI releases every pod network.
    if bin="$(existing_harness_bin)"; then
        if out="$("$bin" clean -r "$ENDPOINT" 2>&1)"; then
            log "cri-harness clean: ${out:-done}"
        else
            log "cri-harness clean did not finish (${out##*$'\n'}); removing through ctr"
        fi
    fi
    # Whatever is left (pods made by hand, or before `clean` existed) goes through containerd
    # directly. That skips CNI DEL: the pod network namespaces and the bridge go with STATE
    # and our netns below, and libcni's result cache (outside STATE) is cleared here.
    for id in $(ctr --address "$SOCK" -n k8s.io tasks ls 2>/dev/null | awk 'NR > 1 {print $1}'); do
        ctr --address "$SOCK" -n k8s.io tasks delete --force "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr --address "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
        ctr --address "$SOCK" -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
        rm -f "$CNI_CACHE/$CNI_NETWORK-$id-"* "$CNI_CACHE/cni-loopback-$id-"*
    done
}

# The harness binary if one exists already; never builds (down must be quick and offline).
existing_harness_bin() {
    if [[ -n "${CRIH_BIN:-}" && -x "$CRIH_BIN" ]]; then
        echo "$CRIH_BIN"
    elif [[ -x "$REPO/target/release/cri-harness" ]]; then
        echo "$REPO/target/release/cri-harness"
    else
        return 1
    fi
}

# Shims outlive containerd by design; ours are the ones started with our socket address. A
# killed shim leaves its socket behind, named by the hash of address, namespace and id.
stop_shims() {
    local dir pid args ns id
    for dir in /proc/[0-9]*; do
        pid="${dir#/proc/}"
        args="$({ tr '\0' ' ' <"$dir/cmdline"; } 2>/dev/null)" || continue
        [[ "$args" == *containerd-shim* && "$args" == *"-address $SOCK "* ]] || continue
        log "killing leftover shim pid $pid"
        kill -KILL "$pid" 2>/dev/null || true
        ns="$(sed -E 's/.* -namespace ([^ ]+) .*/\1/' <<<"$args")"
        id="$(sed -E 's/.* -id ([^ ]+) .*/\1/' <<<"$args")"
        rm -f "/run/containerd/s/$(printf '%s' "$SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)"
    done
}

cmd_down() {
    [[ $EUID -eq 0 ]] || die "run as root"
    if [[ ! -d "$STATE" ]] && { [[ -z "$NSPATH" ]] || [[ ! -e "$NSPATH" ]]; }; then
        log "nothing to remove ($STATE does not exist)"
        return 0
    fi
    local hermetic=0
    remove_pods
    stop_pid "$STATE/containerd.pid" containerd 10
    # Checked again over the whole run, before the logs go with STATE.
    check_registry_hosts || hermetic=1
    if [[ -n "${CRIH_LOG_DIR:-}" ]]; then
        mkdir -p "$CRIH_LOG_DIR"
        cp "$STATE"/*.log "$CRIH_LOG_DIR"/ 2>/dev/null || true
        [[ -z "${SUDO_UID:-}" ]] || chown -R "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$CRIH_LOG_DIR"
    fi
    # Containers whose shim was gone: runc (or a handler's runtime) still knows them under
    # our root. A handler that cannot remove what it made through CRI (runsc here) is reaped
    # the same way.
    local runtime id
    for runtime in runc "${HANDLERS[@]}"; do
        [[ -d "$STATE/$runtime/k8s.io" ]] && command -v "$runtime" >/dev/null || continue
        for id in $("$runtime" --root "$STATE/$runtime/k8s.io" list -q 2>/dev/null); do
            "$runtime" --root "$STATE/$runtime/k8s.io" delete --force "$id" >/dev/null 2>&1 || true
            rm -f "$CNI_CACHE/cni-loopback-$id-"*
        done
    done
    # Every attachment of our network name is ours, whoever made it.
    rm -f "$CNI_CACHE/$CNI_NETWORK-"*
    rmdir "$CNI_CACHE" /var/lib/cni 2>/dev/null || true
    stop_shims
    # Left by the shims; a system containerd recreates them when it needs them.
    rmdir /run/containerd/s /run/containerd 2>/dev/null || true
    stop_pid "$STATE/registry.pid" docker-registry 5
    # Deepest mounts first: container rootfs, sandbox shm and netns mounts all lie under STATE.
    local mnt
    for mnt in $(awk -v s="$STATE" 'index($2, s "/") == 1 {print $2}' /proc/self/mounts | sort -r); do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || log "cannot unmount $mnt"
    done
    if [[ -n "$NSPATH" ]]; then
        # Deleting the namespace takes the bridge and any veth with it.
        [[ -e "$NSPATH" ]] && { ip netns delete "$NETNS" || log "cannot delete netns $NETNS"; }
        if [[ -e "$STATE/netns-dir-mounted-by-us" && -z "$(ls -A /run/netns 2>/dev/null)" ]]; then
            umount /run/netns 2>/dev/null || true
            rmdir /run/netns 2>/dev/null || true
        fi
    elif ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link delete "$BRIDGE" || log "cannot delete bridge $BRIDGE"
    fi
    if [[ -d "$STATE" ]]; then
        rm -rf --one-file-system "$STATE"
    fi
    log "down: removed $STATE"
    return "$hermetic"
}

case "${1:-}" in
up) cmd_up ;;
down) cmd_down ;;
env) echo "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT" ;;
*)
    echo "usage: $0 up|down|env" >&2
    exit 2
    ;;
esac
