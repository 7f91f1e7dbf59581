#!/usr/bin/env bash
# A private CRI-O 1.36 for the harness's CI and nightly runs, beside ci/containerd.sh's lanes:
# `up` installs what is missing from Debian and starts CRI-O, `down` removes what `up` made,
# `env` prints the endpoint. No package registry carries CRI-O, so its binaries (crio, pinns)
# come from ../shared/crio-1.36.3/bin beside the repository; conmon, runc, tini, the CNI
# plugins and crio's libraries are Debian 12's.
#
# It joins ci/containerd.sh's world as one more lane: the same network namespace (loopback
# only, so no pull can leave the machine) and the same registry on 127.0.0.1:PORT serving the
# suites' test images, with its bookkeeping in CRIH_SHARED. `up` starts the registry if no
# lane has, and registers the lane there; `down` removes only its own CRI-O, pods, bridge and
# files, and the registry and namespace go with the last lane's `down`, of whichever runtime.
# The protocol (files, pid file, register entries) is containerd.sh's, so the lanes may come
# and go in any order. Run one `up` or `down` at a time: the bookkeeping takes no lock.
#
# Two signature-policy modes, each a lane of its own that may run beside the other:
#   signature (default)  crio --signature-policy STATE/policy.json. CRI-O then verifies each
#                        image's policy at CreateContainer and refuses a request whose
#                        ImageSpec.user_specified_image is empty; the kubelet and critest
#                        always set it.
#   system               the policy at /etc/containers/policy.json, as a default install has
#                        it (written, accepting anything, if missing, and removed again by
#                        `down` if `up` wrote it). CRI-O skips that check.
#
# What this kind of machine needs of CRI-O (each is commented where it is done): an OCI runtime
# wrapper (root lacks CAP_SYS_RESOURCE), crio under `tini -s` (PID 1 is not systemd and reaps
# slowly), cgroupfs, runc rather than crun (hybrid cgroups), and a pause image that exits on
# SIGTERM (ci/crio/pause.c).
#
# Usage: [CRIH_CRIO_POLICY=system] ci/crio.sh up|down|env   (as root)
#   stdout of `up` and `env` is one line, CONTAINER_RUNTIME_ENDPOINT=unix://STATE/crio.sock;
#   progress goes to stderr.
# Environment (a default given as A / B is the signature / system lane's):
#   CRIH_CRIO_POLICY    the lane: signature (default) or system
#   CRIH_CRIO_DIR       where bin/crio and bin/pinns are (default REPO/../shared/crio-1.36.3)
#   CRIH_STATE          state directory (default /tmp/cri-harness-crio /
#                       /tmp/cri-harness-crio-system)
#   CRIH_BRIDGE         CNI bridge name (default crih2 / crih4)
#   CRIH_POD_SUBNET     pod addresses (default 10.90.0.0/16 / 10.92.0.0/16)
#   CRIH_REGISTRY_PORT  registry port on 127.0.0.1 (default 5000; lanes sharing a registry
#                       must agree)
#   CRIH_NETNS          network namespace to run in (default cri-harness; "host" for none)
#   CRIH_SHARED         the registry's files and the lanes' register (default
#                       /tmp/cri-harness-shared-NETNS)
#   CRIH_BIN            cri-harness binary (default: cargo build --release, target/release)
#   CRIH_CNI_BIN        CNI plugin directory (default /usr/lib/cni, else /opt/cni/bin)
#   CRIH_CRICTL         crictl for `down` to remove pods the harness did not make (default
#                       crictl on PATH, else REPO/../shared/bin/crictl-v1.36.0; none: skipped)
#   CRIH_SOCKET_UID/GID owner of the CRI socket (default: the sudo caller, else root)
#   CRIH_LOG_DIR        `down` copies crio's and the registry's logs here first
set -euo pipefail

log() { printf 'crio.sh: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# The lane's defaults. The CNI network name must not be a prefix of another lane's, nor have
# one of theirs as its prefix (cri-harness, cri-harness17, cri-harness21): libcni caches each
# attachment as /var/lib/cni/results/NETWORK-ID-IF, and each lane's `down` clears its own by
# the prefix NETWORK-.
case "${CRIH_CRIO_POLICY:-signature}" in
signature)
    LANE=signature
    DEFAULT_STATE=/tmp/cri-harness-crio
    DEFAULT_BRIDGE=crih2
    DEFAULT_SUBNET=10.90.0.0/16
    CNI_NETWORK=crio-signature
    ;;
system)
    LANE=system
    DEFAULT_STATE=/tmp/cri-harness-crio-system
    DEFAULT_BRIDGE=crih4
    DEFAULT_SUBNET=10.92.0.0/16
    CNI_NETWORK=crio-system
    ;;
*) die "CRIH_CRIO_POLICY is signature or system, not ${CRIH_CRIO_POLICY}" ;;
esac

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUPPORT="$REPO/ci/crio"
CRIO_DIR="${CRIH_CRIO_DIR:-$REPO/../shared/crio-1.36.3}"
CRIO="$CRIO_DIR/bin/crio"
PINNS="$CRIO_DIR/bin/pinns"
STATE="${CRIH_STATE:-$DEFAULT_STATE}"
PORT="${CRIH_REGISTRY_PORT:-5000}"
NETNS="${CRIH_NETNS:-cri-harness}"
SHARED="${CRIH_SHARED:-/tmp/cri-harness-shared-$NETNS}"
BRIDGE="${CRIH_BRIDGE:-$DEFAULT_BRIDGE}"
SUBNET="${CRIH_POD_SUBNET:-$DEFAULT_SUBNET}"
SOCK="$STATE/crio.sock"
ENDPOINT="unix://$SOCK"
REGISTRY="127.0.0.1:$PORT"
SOCKET_UID="${CRIH_SOCKET_UID:-${SUDO_UID:-0}}"
SOCKET_GID="${CRIH_SOCKET_GID:-${SUDO_GID:-0}}"
CNI_PLUGINS=(bridge host-local portmap loopback)
CNI_CACHE="/var/lib/cni/results"
USER_ENTRY="$SHARED/users/${STATE//\//_}"
SYSTEM_POLICY=/etc/containers/policy.json

# The sandbox image: ci/crio/pause.c, under a repository of its own in the shared registry
# (never the harness's registry.k8s.io/pause:3.9, which the containerd lanes use).
PAUSE_REPOSITORY="crio-lane/pause"
PAUSE_TAG=1
PAUSE_IMAGE="localhost/$PAUSE_REPOSITORY:$PAUSE_TAG"

# Every registry name the suites, critest and `images push` use, and the registry's own names.
# Each is rewritten to the local registry by `location`, with no mirror, so a pull never falls
# back to the name's real host; short names resolve through docker.io.
REWRITTEN_REGISTRIES=(registry.k8s.io k8s.gcr.io gcr.io docker.io index.docker.io quay.io
    public.ecr.aws ghcr.io localhost "localhost:$PORT" "$REGISTRY")

if [[ "$NETNS" == host ]]; then
    NSPATH=""
    IN_NS=()
else
    NSPATH="/var/run/netns/$NETNS"
    # Only the network namespace: mounts stay the host's, so `down` sees and undoes them.
    IN_NS=(nsenter "--net=$NSPATH" --)
fi

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

# Waits until the process started in the background as pid $1 has exec'd binary $2.
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
    [[ -x "$CRIO" && -x "$PINNS" ]] ||
        die "no $CRIO or $PINNS: set CRIH_CRIO_DIR to the directory holding bin/crio"
    local missing=() command
    # package:command pairs; a command another package provides will do.
    local wanted=(conmon:conmon runc:runc tini:tini skopeo:skopeo docker-registry:docker-registry
        jq:jq iproute2:ip util-linux:nsenter iptables:iptables gcc:gcc python3:python3)
    local pair
    for pair in "${wanted[@]}"; do
        command="${pair#*:}"
        command -v "$command" >/dev/null || missing+=("${pair%%:*}")
    done
    cni_bin_dir >/dev/null || missing+=(containernetworking-plugins)
    # `images push` builds the test images from Debian's static busybox.
    dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
        missing+=(busybox-static)
    # pause.c is linked static: glibc's static archive.
    [[ -e /usr/lib/x86_64-linux-gnu/libc.a ]] || missing+=(libc6-dev)
    # The shared libraries crio links (libgpgme pulls in libassuan and libgpg-error).
    if ldd "$CRIO" 2>/dev/null | grep -q 'not found'; then
        missing+=(libgpgme11 libseccomp2 libsqlite3-0)
    fi
    if ((${#missing[@]})); then
        mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
        log "installing ${missing[*]}"
        apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
            --no-install-recommends "${missing[@]}" >&2
    fi
    if ldd "$CRIO" | grep 'not found' >&2; then
        die "$CRIO still misses the libraries above"
    fi
}

# A state directory belongs to one lane: the other lane's `up` on it would start a second
# crio on the same storage.
claim_state() {
    if [[ -f "$STATE/lane" && "$(<"$STATE/lane")" != "crio-$LANE" ]]; then
        die "$STATE is the $(<"$STATE/lane") lane's; set CRIH_STATE for the crio-$LANE lane"
    fi
    mkdir -p "$STATE"
    echo "crio-$LANE" >"$STATE/lane"
}

# Registers this lane with the shared registry and network namespace, and writes the
# registry's config as containerd.sh does (the first lane up starts the registry from it).
join_shared() {
    mkdir -p "$SHARED/users" "$SHARED/registry"
    if [[ -f "$SHARED/port" && "$(<"$SHARED/port")" != "$PORT" ]]; then
        die "the registry of $SHARED serves port $(<"$SHARED/port"), not $PORT: use that port, or set CRIH_SHARED and CRIH_NETNS for a registry and namespace of this lane's own"
    fi
    echo "$PORT" >"$SHARED/port"
    echo "$STATE" >"$USER_ENTRY"
    [[ -f "$SHARED/registry.yml" ]] || cat >"$SHARED/registry.yml" <<EOF
version: 0.1
log:
  level: info
  fields:
    service: registry
storage:
  filesystem:
    rootdirectory: $SHARED/registry
  delete:
    enabled: true
http:
  addr: $REGISTRY
EOF
}

# Takes this lane out of the register; the last lane out stops the registry and removes the
# namespace and the register. A lane whose state directory is gone is not up.
leave_shared() {
    rm -f "$USER_ENTRY"
    local entry others=()
    for entry in "$SHARED"/users/*; do
        [[ -f "$entry" ]] || continue
        if [[ -d "$(<"$entry")" ]]; then
            others+=("$(<"$entry")")
        else
            rm -f "$entry"
        fi
    done
    if ((${#others[@]})); then
        log "leaving the registry and network namespace up for ${others[*]}"
        return 0
    fi
    stop_pid "$SHARED/registry.pid" docker-registry 5
    if [[ -n "$NSPATH" ]]; then
        [[ -e "$NSPATH" ]] && { ip netns delete "$NETNS" || log "cannot delete netns $NETNS"; }
        if [[ -e "$SHARED/netns-dir-mounted-by-us" && -z "$(ls -A /run/netns 2>/dev/null)" ]]; then
            umount /run/netns 2>/dev/null || true
            rmdir /run/netns 2>/dev/null || true
        fi
    fi
    if [[ -d "$SHARED" ]]; then
        rm -rf --one-file-system "$SHARED"
        log "down: removed $SHARED"
    fi
}

ensure_netns() {
    [[ -n "$NSPATH" ]] || return 0
    if [[ ! -e "$NSPATH" ]]; then
        if ! mountpoint -q /run/netns 2>/dev/null; then
            touch "$SHARED/netns-dir-mounted-by-us"
        fi
        log "creating network namespace $NETNS (loopback only)"
        ip netns add "$NETNS"
    fi
    ip -n "$NETNS" link set lo up
}

# The lane's bridge, made before any pod with a fixed MAC address. A Linux bridge otherwise
# takes the lowest MAC of its ports, so it changes as pods come and go, and the bridge plugin's
# CHECK, which CRI-O runs right after a pod's ADD, then fails the RunPodSandbox with "Bridge
# interface ... Mac doesn't match" (seen once in CI with two sandboxes made at once).
ensure_bridge() {
    local ip=(ip)
    [[ -z "$NSPATH" ]] || ip=(ip -n "$NETNS")
    if ! "${ip[@]}" link show "$BRIDGE" >/dev/null 2>&1; then
        "${ip[@]}" link add "$BRIDGE" type bridge
    fi
    # Locally administered and unicast (02:...), the lane's bridge number (mod 256) last.
    local number="${BRIDGE//[!0-9]/}"
    "${ip[@]}" link set "$BRIDGE" address "02:63:72:69:68:$(printf '%02x' $((10#${number:-0} % 256)))"
    "${ip[@]}" link set "$BRIDGE" up
}

registry_answers() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    "${IN_NS[@]}" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3
        read -r -t 2 status <&3 || exit 1
        [[ "$status" == *" 200 "* ]]' _ "$PORT" 2>/dev/null
}

start_registry() {
    if live_pid "$SHARED/registry.pid" docker-registry >/dev/null; then
        log "registry already running on $REGISTRY"
    else
        if registry_answers; then
            die "something else already answers on $REGISTRY; set CRIH_REGISTRY_PORT"
        fi
        log "starting docker-registry on $REGISTRY"
        "${IN_NS[@]}" docker-registry serve "$SHARED/registry.yml" \
            </dev/null >>"$SHARED/registry.log" 2>&1 &
        echo $! >"$SHARED/registry.pid"
        await_exec $! docker-registry
    fi
    for ((i = 0; i < 100; i++)); do
        registry_answers && return 0
        live_pid "$SHARED/registry.pid" docker-registry >/dev/null ||
            die "docker-registry exited; see $SHARED/registry.log"
        sleep 0.2
    done
    die "docker-registry did not answer on $REGISTRY within 20 s; see $SHARED/registry.log"
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

# The suites' images. skopeo skips every blob the registry has, so when a containerd lane has
# pushed them already this only rewrites the manifests, and a changed image is never stale.
push_images() {
    local bin="$1"
    log "pushing the test images to $REGISTRY"
    "${IN_NS[@]}" "$bin" images push --registry "$REGISTRY" >&2
}

# A manifest's config digest in the registry (empty if it has none).
registry_config_digest() {
    local repository="$1" tag="$2"
    # shellcheck disable=SC2016 # expanded by the inner bash
    "${IN_NS[@]}" bash -c '
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf "GET /v2/%s/manifests/%s HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\n\r\n" "$2" "$3" >&3
        cat <&3' _ "$PORT" "$repository" "$tag" 2>/dev/null |
        sed '1,/^\r\{0,1\}$/d' | jq -r '.config.digest // empty' 2>/dev/null || true
}

# Builds ci/crio/pause.c into a one-layer image and pushes it unless the registry has this
# build already (compared by config digest: skopeo may recompress the layer on the way).
push_pause() {
    local dir="$STATE/pause" manifest want have
    mkdir -p "$dir"
    gcc -static -Os -s -Wall -Werror -o "$dir/pause" "$SUPPORT/pause.c" ||
        die "cannot build $SUPPORT/pause.c"
    rm -rf "$dir/oci"
    manifest="$(python3 "$SUPPORT/oci-image.py" "$dir/pause" "$dir/oci" "$PAUSE_TAG")"
    want="$(jq -r '.config.digest' "$dir/oci/blobs/sha256/${manifest#sha256:}")"
    have="$(registry_config_digest "$PAUSE_REPOSITORY" "$PAUSE_TAG")"
    if [[ "$want" == "$have" ]]; then
        log "the registry already has this pause image ($PAUSE_IMAGE)"
        return 0
    fi
    log "pushing the pause image as $REGISTRY/$PAUSE_REPOSITORY:$PAUSE_TAG"
    "${IN_NS[@]}" skopeo copy --quiet --insecure-policy --dest-tls-verify=false \
        "oci:$dir/oci:$PAUSE_TAG" "docker://$REGISTRY/$PAUSE_REPOSITORY:$PAUSE_TAG" >&2 ||
        die "cannot push the pause image to $REGISTRY"
}

# The names of the capabilities this machine's bounding set lacks, in the order of
# linux/capability.h, as "JSON-ARRAY ERE" for ci/crio/oci-runtime.sh.
missing_capabilities() {
    local names=(CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
        LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER
        SYS_MODULE SYS_RAWIO SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE
        SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE AUDIT_WRITE AUDIT_CONTROL SETFCAP
        MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
        CHECKPOINT_RESTORE)
    local last bounding i json="" ere=""
    last="$(</proc/sys/kernel/cap_last_cap)"
    bounding="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
    [[ "$bounding" =~ ^[0-9a-f]+$ ]] || die "cannot read the capability bounding set"
    for ((i = 0; i <= last && i < ${#names[@]}; i++)); do
        if (((16#$bounding >> i & 1) == 0)); then
            json+="${json:+,}\"CAP_${names[i]}\""
            ere+="${ere:+|}\"CAP_${names[i]}\""
        fi
    done
    echo "[$json] ${ere:-\"CAP_NONE_MISSING\"}"
}

write_runtime() {
    local runc json ere
    runc="$(command -v runc)" || die "no runc on PATH"
    read -r json ere < <(missing_capabilities)
    mkdir -p "$STATE/bin"
    sed -e "s|@RUNC@|$runc|" -e "s|@MISSING_JSON@|$json|" -e "s/@MISSING_ERE@/$ere/" \
        "$SUPPORT/oci-runtime.sh" >"$STATE/bin/runc.new"
    chmod 0755 "$STATE/bin/runc.new"
    mv -f "$STATE/bin/runc.new" "$STATE/bin/runc"
    log "OCI runtime: $STATE/bin/runc, then $runc (drops $json, raises oomScoreAdj to crio's own)"
}

write_configs() {
    local cni_bin="$1" conmon
    conmon="$(command -v conmon)" || die "no conmon on PATH"
    mkdir -p "$STATE"/{storage,runroot,run/exits,run/ns,run/runc,lib,pod-logs,tmp,hooks.d} \
        "$STATE"/{crio.conf.d,registries.conf.d,policies,auth,keys,cdi,cni/net.d,cni/ipam}

    # PID 1 is not systemd here: cgroupfs, and conmon in the pod's cgroup (a systemd lane
    # would put it in system.slice). A pod's cgroup parent must then be a cgroupfs path.
    local cgroup_manager=cgroupfs monitor_cgroup=pod
    if [[ "$(cat /proc/1/comm)" == systemd && -d /run/systemd/system ]]; then
        cgroup_manager=systemd
        monitor_cgroup=system.slice
    fi

    # Every path CRI-O would take from the system is the lane's, so two lanes and a system
    # CRI-O never share one.
    cat >"$STATE/crio.conf" <<EOF
# Written by ci/crio.sh for the crio-$LANE lane: a CRI-O that shares no path or socket.
[crio]
root = "$STATE/storage"
runroot = "$STATE/runroot"
storage_driver = "overlay"
log_dir = "$STATE/pod-logs"
version_file = "$STATE/run/version"
version_file_persist = "$STATE/lib/version"
clean_shutdown_file = "$STATE/lib/clean.shutdown"

[crio.api]
listen = "$SOCK"
stream_address = "127.0.0.1"
stream_port = "0"

[crio.runtime]
# runc: Debian 12's crun 1.8.1 refuses this machine's hybrid cgroup layout.
default_runtime = "runc"
cgroup_manager = "$cgroup_manager"
container_exits_dir = "$STATE/run/exits"
container_attach_socket_dir = "$STATE/run"
namespaces_dir = "$STATE/run/ns"
pinns_path = "$PINNS"
hooks_dir = ["$STATE/hooks.d"]
cdi_spec_dirs = ["$STATE/cdi"]
decryption_keys_path = "$STATE/keys/"
irqbalance_config_file = "$STATE/irqbalance"
irqbalance_config_restore_file = "disable"
# debug logs each registry location tried, which up and down check are all local.
log_level = "debug"

[crio.runtime.runtimes.runc]
runtime_path = "$STATE/bin/runc"
runtime_type = "oci"
runtime_root = "$STATE/run/runc"
monitor_path = "$conmon"
monitor_cgroup = "$monitor_cgroup"

[crio.image]
pause_image = "$PAUSE_IMAGE"
big_files_temporary_dir = "$STATE/tmp"
signature_policy_dir = "$STATE/policies"
namespaced_auth_dir = "$STATE/auth"

[crio.network]
cni_default_network = "$CNI_NETWORK"
network_dir = "$STATE/cni/net.d/"
plugin_dirs = ["$cni_bin"]

[crio.metrics]
enable_metrics = false

# The harness tests CRI alone; NRI's socket would otherwise be the system's.
[crio.nri]
enable_nri = false
nri_listen = "$STATE/nri.sock"
EOF

    cat >"$STATE/storage.conf" <<EOF
[storage]
driver = "overlay"
runroot = "$STATE/runroot"
graphroot = "$STATE/storage"
EOF

    cat >"$STATE/policy.json" <<'EOF'
{"default": [{"type": "insecureAcceptAnything"}]}
EOF

    {
        echo '# Written by ci/crio.sh: every registry name the tests use is the local registry.'
        echo '# "location" rewrites the name and there is no mirror, so nothing falls back upstream.'
        echo 'unqualified-search-registries = ["docker.io"]'
        local name
        for name in "${REWRITTEN_REGISTRIES[@]}"; do
            printf '\n[[registry]]\nprefix = "%s"\nlocation = "%s"\ninsecure = true\n' \
                "$name" "$REGISTRY"
        done
    } >"$STATE/registries.conf"

    # As containerd.sh's network: isGateway gives the bridge the range's first address, so
    # the node (the namespace crio runs in) reaches pod IPs and host ports; pods get no
    # default route and the namespace has no link out.
    rm -f "$STATE"/cni/net.d/*
    cat >"$STATE/cni/net.d/10-$CNI_NETWORK.conflist" <<EOF
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
}

# crio's arguments for this lane's policy mode.
crio_args() {
    CRIO_ARGS=(--config "$STATE/crio.conf" --config-dir "$STATE/crio.conf.d"
        --registries-conf "$STATE/registries.conf"
        --registries-conf-dir "$STATE/registries.conf.d")
    if [[ "$LANE" == signature ]]; then
        CRIO_ARGS+=(--signature-policy "$STATE/policy.json")
    fi
}

# The system lane's policy: the system file, written (accepting anything) only if missing,
# and then recorded so `down` removes exactly that.
ensure_system_policy() {
    [[ "$LANE" == system ]] || return 0
    if [[ -e "$SYSTEM_POLICY" ]]; then
        log "using the system's $SYSTEM_POLICY"
        return 0
    fi
    if [[ ! -d "${SYSTEM_POLICY%/*}" ]]; then
        mkdir -p "${SYSTEM_POLICY%/*}"
        touch "$STATE/made-policy-dir"
    fi
    cp "$STATE/policy.json" "$SYSTEM_POLICY"
    touch "$STATE/made-policy"
    log "wrote $SYSTEM_POLICY (removed again by down)"
}

start_crio() {
    crio_args
    if live_pid "$STATE/crio.pid" crio >/dev/null; then
        log "crio already running"
        return 0
    fi
    export CONTAINERS_STORAGE_CONF="$STATE/storage.conf"
    "$CRIO" "${CRIO_ARGS[@]}" config >"$STATE/crio-effective.conf" 2>"$STATE/crio-config.log" ||
        die "crio rejects $STATE/crio.conf: $(tail -3 "$STATE/crio-config.log")"
    rm -f "$SOCK"
    log "starting crio ($LANE policy; log: $STATE/crio.log)"
    # tini -s makes itself the subreaper of what crio starts: conmon daemonizes, and its
    # orphans would otherwise wait for this machine's slow PID 1. setsid keeps crio out of
    # the caller's session and its signals.
    setsid "${IN_NS[@]}" tini -s -- "$CRIO" "${CRIO_ARGS[@]}" \
        </dev/null >>"$STATE/crio.log" 2>&1 &
    local launcher=$! crio_pid="" child children=()
    await_exec "$launcher" tini
    echo "$launcher" >"$STATE/reaper.pid"
    for ((i = 0; i < 50; i++)); do
        children=()
        # The file has no final newline, so read fails even when it has read the pids.
        read -r -a children 2>/dev/null <"/proc/$launcher/task/$launcher/children" || true
        for child in "${children[@]}"; do
            [[ "$(readlink "/proc/$child/exe" 2>/dev/null)" == */crio ]] && crio_pid="$child"
        done
        [[ -n "$crio_pid" ]] && break
        sleep 0.1
    done
    [[ -n "$crio_pid" ]] || die "tini (pid $launcher) started no crio; see $STATE/crio.log"
    echo "$crio_pid" >"$STATE/crio.pid"
}

wait_cri() {
    local bin="$1"
    for ((i = 0; i < 300; i++)); do
        if [[ -S "$SOCK" ]] && "$bin" version -r "$ENDPOINT" >/dev/null 2>&1; then
            chown "$SOCKET_UID:$SOCKET_GID" "$SOCK"
            return 0
        fi
        live_pid "$STATE/crio.pid" crio >/dev/null || die "crio exited; see $STATE/crio.log"
        sleep 0.2
    done
    die "crio's CRI did not answer within 60 s; see $STATE/crio.log"
}

# Pulls the images every run keeps through CRI, as the kubelet would, so a wrong registry
# setup fails here rather than in the first case; crio pulls its pause image itself.
pull_images() {
    local bin="$1"
    log "pulling the test images through CRI"
    "$bin" images pull -r "$ENDPOINT" --timeout 60s >&2 ||
        die "cannot pull the test images from the local registry; see $STATE/crio.log"
}

# Fails if crio's log shows a registry location tried other than the local registry.
check_registry_hosts() {
    [[ -f "$STATE/crio.log" ]] || return 0
    local tried
    tried="$(grep -oE 'Trying to access \\"[^/\\"]+' "$STATE/crio.log" |
        sed -E 's/^Trying to access \\"//' | sort -u | grep -vxF "$REGISTRY" || true)"
    if [[ -n "$tried" ]]; then
        log "error: crio tried registry hosts off this machine: $(echo "$tried" | tr '\n' ' ')"
        return 1
    fi
}

cmd_up() {
    local started=$SECONDS
    [[ $EUID -eq 0 ]] || die "run as root (crio, CNI and network namespaces need it)"
    claim_state
    install_packages
    local cni_bin bin
    cni_bin="$(cni_bin_dir)" || die "no CNI plugin directory with ${CNI_PLUGINS[*]}"
    write_runtime
    write_configs "$cni_bin"
    ensure_system_policy
    join_shared
    ensure_netns
    ensure_bridge
    bin="$(harness_bin)"
    start_registry
    push_images "$bin"
    push_pause
    start_crio
    wait_cri "$bin"
    pull_images "$bin"
    check_registry_hosts || die "registry resolution is not hermetic"
    log "crio ($LANE policy) up in $((SECONDS - started)) s; endpoint $ENDPOINT"
    echo "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT"
}

crictl_bin() {
    if [[ -n "${CRIH_CRICTL:-}" ]]; then
        [[ -x "$CRIH_CRICTL" ]] && echo "$CRIH_CRICTL"
    elif command -v crictl >/dev/null; then
        command -v crictl
    elif [[ -x "$REPO/../shared/bin/crictl-v1.36.0" ]]; then
        echo "$REPO/../shared/bin/crictl-v1.36.0"
    fi
}

# Removes every pod through CRI while crio runs, so CNI releases each pod network and CRI-O
# its host ports: crio's own exit stops no container.
remove_pods() {
    live_pid "$STATE/crio.pid" crio >/dev/null || return 0
    [[ -S "$SOCK" ]] || return 0
    local bin out crictl id
    if bin="$(existing_harness_bin)"; then
        if out="$("$bin" clean -r "$ENDPOINT" 2>&1)"; then
            log "cri-harness clean: ${out:-done}"
        else
            log "cri-harness clean did not finish (${out##*$'\n'})"
        fi
    fi
    crictl="$(crictl_bin)"
    [[ -n "$crictl" ]] || return 0
    local c=("$crictl" --runtime-endpoint "$ENDPOINT" --image-endpoint "$ENDPOINT" --timeout 30s)
    for id in $("${c[@]}" ps -aq 2>/dev/null); do
        "${c[@]}" rm -f "$id" >/dev/null 2>&1 || true
    done
    for id in $("${c[@]}" pods -q 2>/dev/null); do
        "${c[@]}" stopp "$id" >/dev/null 2>&1 || true
        "${c[@]}" rmp -f "$id" >/dev/null 2>&1 || true
    done
}

# Processes left by this lane: any conmon (or container process runc still knows) started
# with a path under STATE.
stop_leftovers() {
    local dir pid args
    for dir in /proc/[0-9]*; do
        pid="${dir#/proc/}"
        [[ "$(cat "$dir/comm" 2>/dev/null)" == conmon ]] || continue
        args="$({ tr '\0' ' ' <"$dir/cmdline"; } 2>/dev/null)" || continue
        [[ "$args" == *" $STATE/"* ]] || continue
        log "killing leftover conmon pid $pid"
        kill -KILL "$pid" 2>/dev/null || true
    done
    local runc id
    runc="$(command -v runc)" || return 0
    [[ -d "$STATE/run/runc" ]] || return 0
    for id in $("$runc" --root "$STATE/run/runc" list -q 2>/dev/null); do
        log "removing leftover container $id"
        "$runc" --root "$STATE/run/runc" delete --force "$id" >/dev/null 2>&1 || true
        rm -f "$CNI_CACHE/cni-loopback-$id-"*
    done
}

delete_bridge() {
    local ip=(ip) link
    if [[ -n "$NSPATH" ]]; then
        [[ -e "$NSPATH" ]] || return 0
        ip=(ip -n "$NETNS")
    fi
    "${ip[@]}" link show "$BRIDGE" >/dev/null 2>&1 || return 0
    for link in $("${ip[@]}" -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print $2}'); do
        "${ip[@]}" link delete "$link" 2>/dev/null || true
    done
    "${ip[@]}" link delete "$BRIDGE" || log "cannot delete bridge $BRIDGE"
}

# True if another CRI-O lane is registered and up (its state directory exists).
other_crio_lane_up() {
    local entry state
    for entry in "$SHARED"/users/*; do
        [[ -f "$entry" && "$entry" != "$USER_ENTRY" ]] || continue
        state="$(<"$entry")"
        [[ -d "$state" && -f "$state/lane" && "$(<"$state/lane")" == crio-* ]] && return 0
    done
    return 1
}

# CRI-O's host-port chains and tables (its hostport manager writes them in the namespace crio
# runs in, and keeps the top-level ones after the last pod). The containerd lanes' portmap
# plugin uses CNI-* names, so only the last CRI-O lane out removes these.
remove_hostport_rules() {
    other_crio_lane_up && return 0
    [[ -z "$NSPATH" || -e "$NSPATH" ]] || return 0
    local table chain tool
    for tool in iptables ip6tables; do
        command -v "$tool" >/dev/null || continue
        for table in nat filter; do
            for chain in $("${IN_NS[@]}" "$tool" -t "$table" -S 2>/dev/null |
                awk '$1 == "-N" && ($2 ~ /^CRIO-/ || $2 ~ /^KUBE-HOSTPORTS$|^KUBE-HP-/) {print $2}'); do
                # Unhook the chain from wherever it is jumped to, then empty and delete it.
                # xargs splits each rule as iptables -S quoted it (comments hold spaces).
                "${IN_NS[@]}" "$tool" -t "$table" -S 2>/dev/null |
                    grep -E -- "^-A .* -j $chain( |\$)" | sed 's/^-A /-D /' |
                    xargs -r -L1 "${IN_NS[@]}" "$tool" -t "$table" 2>/dev/null || true
                "${IN_NS[@]}" "$tool" -t "$table" -F "$chain" 2>/dev/null || true
            done
            for chain in $("${IN_NS[@]}" "$tool" -t "$table" -S 2>/dev/null |
                awk '$1 == "-N" && ($2 ~ /^CRIO-/ || $2 ~ /^KUBE-HOSTPORTS$|^KUBE-HP-/) {print $2}'); do
                "${IN_NS[@]}" "$tool" -t "$table" -X "$chain" 2>/dev/null ||
                    log "cannot delete $tool chain $table/$chain"
            done
        done
    done
    if command -v nft >/dev/null; then
        local family name
        while read -r _ family name; do
            [[ "$name" == crio* ]] || continue
            "${IN_NS[@]}" nft delete table "$family" "$name" 2>/dev/null ||
                log "cannot delete nft table $family $name"
        done < <("${IN_NS[@]}" nft list tables 2>/dev/null)
    fi
}

# The ids of every sandbox and container this lane's crio made: its log names each.
lane_ids() {
    [[ -f "$STATE/crio.log" ]] || return 0
    grep -oE '\b[0-9a-f]{64}\b' "$STATE/crio.log" | sort -u
}

# Under cgroupfs runc makes crio-ID (and CRI-O crio-conmon-ID) in each hierarchy, below the
# pod's cgroup parent or, for a pod with none, below /crio; not all are removed with their
# container. Only empty ones of this lane's ids go (rmdir refuses a cgroup in use), and /crio
# itself once empty and no other CRI-O lane is up.
remove_cgroups() {
    local -A ours=()
    local id dir name removed=0
    while read -r id; do ours[$id]=1; done < <(lane_ids)
    ((${#ours[@]})) || return 0
    while read -r dir; do
        name="${dir##*/}"
        id="${name#crio-conmon-}"
        id="${id#crio-}"
        [[ -n "${ours[$id]:-}" ]] || continue
        if rmdir "$dir" 2>/dev/null; then
            removed=$((removed + 1))
        else
            log "cannot remove cgroup $dir (still in use?)"
        fi
    done < <(find /sys/fs/cgroup -depth -type d -name 'crio-*' 2>/dev/null)
    ((removed == 0)) || log "removed $removed cgroups crio left behind"
    other_crio_lane_up && return 0
    for dir in /sys/fs/cgroup/crio /sys/fs/cgroup/*/crio; do
        if [[ -d "$dir" ]]; then rmdir "$dir" 2>/dev/null || true; fi
    done
}

remove_system_policy() {
    if [[ -e "$STATE/made-policy" ]]; then
        rm -f "$SYSTEM_POLICY"
        log "removed $SYSTEM_POLICY"
    fi
    if [[ -e "$STATE/made-policy-dir" ]]; then
        rmdir "${SYSTEM_POLICY%/*}" 2>/dev/null || log "left ${SYSTEM_POLICY%/*}: not empty"
    fi
}

# What `down` promises: nothing of this lane runs, is mounted or is linked any more.
NOT_HERMETIC=0
check_gone() {
    local left=0 dir args
    for dir in /proc/[0-9]*; do
        args="$({ tr '\0' ' ' <"$dir/cmdline"; } 2>/dev/null)" || continue
        if [[ "$args" == *"$STATE/"* ]]; then
            log "error: pid ${dir#/proc/} still runs: $args"
            left=1
        fi
    done
    if awk -v s="$STATE" 'index($2, s "/") == 1 || $2 == s {found = 1} END {exit !found}' /proc/self/mounts; then
        log "error: mounts remain under $STATE"
        left=1
    fi
    if [[ -z "$NSPATH" || -e "$NSPATH" ]] && "${IN_NS[@]}" ip link show "$BRIDGE" >/dev/null 2>&1; then
        log "error: bridge $BRIDGE remains"
        left=1
    fi
    if compgen -G "$CNI_CACHE/$CNI_NETWORK-*" >/dev/null; then
        log "error: CNI results of $CNI_NETWORK remain in $CNI_CACHE"
        left=1
    fi
    local -A ours=()
    local id cgroup
    while read -r id; do ours[$id]=1; done < <(lane_ids)
    while read -r cgroup; do
        id="${cgroup##*/crio-}"
        id="${id#conmon-}"
        if [[ -n "${ours[$id]:-}" ]]; then
            log "error: cgroup $cgroup remains"
            left=1
        fi
    done < <(find /sys/fs/cgroup -type d -name 'crio-*' 2>/dev/null)
    return "$left"
}

down_lane() {
    remove_pods
    stop_pid "$STATE/crio.pid" crio 30
    # tini exits once crio has; a reaper left with children of ours is stopped.
    stop_pid "$STATE/reaper.pid" tini 5
    check_registry_hosts || NOT_HERMETIC=1
    if [[ -n "${CRIH_LOG_DIR:-}" ]]; then
        mkdir -p "$CRIH_LOG_DIR"
        cp "$STATE"/*.log "$SHARED"/*.log "$CRIH_LOG_DIR"/ 2>/dev/null || true
        [[ -z "${SUDO_UID:-}" ]] || chown -R "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$CRIH_LOG_DIR"
    fi
    stop_leftovers
    rm -f "$CNI_CACHE/$CNI_NETWORK-"*
    rmdir "$CNI_CACHE" /var/lib/cni 2>/dev/null || true
    # Deepest first: container rootfs, shm, and the namespaces pinns pinned, all under STATE.
    local mnt
    while read -r mnt; do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || log "cannot unmount $mnt"
    done < <(awk -v s="$STATE" 'index($2, s "/") == 1 {print $2}' /proc/self/mounts | sort -r)
    delete_bridge
    remove_hostport_rules
    remove_cgroups
    remove_system_policy
    check_gone || NOT_HERMETIC=1
    rm -rf --one-file-system "$STATE"
    log "down: removed $STATE"
}

cmd_down() {
    [[ $EUID -eq 0 ]] || die "run as root"
    if [[ -d "$STATE" ]]; then
        if [[ -f "$STATE/lane" && "$(<"$STATE/lane")" != "crio-$LANE" ]]; then
            die "$STATE is the $(<"$STATE/lane") lane's, not crio-$LANE's"
        fi
        down_lane
    else
        log "no crio-$LANE lane to remove ($STATE does not exist)"
    fi
    [[ -d "$SHARED" ]] && leave_shared
    return "$NOT_HERMETIC"
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
