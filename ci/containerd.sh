#!/usr/bin/env bash
# A private containerd (CRI v1) for the harness's CI and nightly runs, with a local registry
# serving the suites' test images: `up` installs what is missing and starts everything, `down`
# removes what `up` made, `env` prints the endpoint. Nothing is fetched but distribution
# packages, and containerd never reaches a registry off this machine: by default the registry,
# containerd and every pod network live in a network namespace of their own that has only a
# loopback interface, so a misconfigured pull fails locally instead of leaving the machine.
#
# Three containerd versions, each a lane of its own that may run beside the others:
#   1.6 (default)  containerd 1.6.20, Debian 12's package, installed on the system.
#   1.7            containerd 1.7.24, Debian 13 ("trixie")'s package. It is never installed:
#                  `apt-get download` fetches it through a private apt setup built from this
#                  machine's own sources (the Debian archive URI and keyring, suite trixie;
#                  the system's lists and cache stay untouched), and `dpkg-deb -x` unpacks it
#                  under CRIH_CACHE, where it stays so a later `up` does not download again.
#                  Its binaries need only glibc 2.34, but trixie's runc needs 2.38, so its runc
#                  v2 shim (the 1.7.24 one, first on containerd's PATH) runs Debian 12's runc.
#   2.1            containerd 2.1.9, Debian forky's package, fetched and unpacked as 1.7's is
#                  (suite forky) and run the same way, with Debian 12's runc (forky's needs
#                  glibc 2.38 too). Its config is version 3: the CRI plugin's settings are
#                  split between io.containerd.cri.v1.runtime and io.containerd.cri.v1.images,
#                  and NRI and the snapshotters that cannot work here are disabled plugins.
# Each lane has its own state directory (config, root, state, socket, `opt`, runc root, CNI
# config and IPAM), CNI bridge and network name, and pod subnet. The lanes share the network
# namespace and the registry (one per namespace, its files in CRIH_SHARED): `up` registers the
# lane there, `down` removes only its own lane's containerd, pods, bridge and files, and the
# registry and the namespace go with the last lane's `down`, whichever goes first.
# Run one `up` or `down` at a time: the lanes' bookkeeping takes no lock.
#
# Usage: [CRIH_CONTAINERD=1.7|2.1] ci/containerd.sh up|down|env   (as root)
#   stdout of `up` and `env` is one line, CONTAINER_RUNTIME_ENDPOINT=unix://STATE/containerd.sock;
#   progress goes to stderr.
# Environment (a default given as 1.6/1.7/2.1 is the lane's):
#   CRIH_CONTAINERD     the lane: 1.6 (default), 1.7 or 2.1
#   CRIH_STATE          state directory (default /tmp/cri-harness-containerd /
#                       /tmp/cri-harness-containerd17 / /tmp/cri-harness-containerd21)
#   CRIH_REGISTRY_PORT  registry port on 127.0.0.1 (default 5000; lanes sharing a registry
#                       must agree)
#   CRIH_NETNS          network namespace to run in (default cri-harness; "host" for none)
#   CRIH_SHARED         the registry's files and the lanes' register (default
#                       /tmp/cri-harness-shared-NETNS)
#   CRIH_BRIDGE         CNI bridge name (default crih0 / crih1 / crih3)
#   CRIH_POD_SUBNET     pod addresses (default 10.88.0.0/16, as the mock runtime's /
#                       10.89.0.0/16 / 10.91.0.0/16)
#   CRIH_CACHE          where the 1.7 and 2.1 lanes keep their unpacked package (default
#                       /var/cache/cri-harness; `down` leaves it)
#   CRIH_BIN            cri-harness binary (default: cargo build --release, target/release)
#   CRIH_CNI_BIN        CNI plugin directory (default /usr/lib/cni, else /opt/cni/bin)
#   CRIH_SOCKET_UID/GID owner of the CRI socket (default: the sudo caller, else root), so a
#                       non-root test run can reach a containerd started with sudo
#   CRIH_LOG_DIR        `down` copies containerd's and the registry's logs here first
#   CRIH_HANDLERS       extra RuntimeClass handlers, each an OCI runtime binary on PATH run
#                       through the runc v2 shim (default "runsc crun" / none / none; "" for
#                       none); each is installed from Debian if missing and named after its binary
set -euo pipefail

log() { printf 'containerd.sh: %s\n' "$*" >&2; }
die() {
    log "error: $*"
    exit 1
}

# The lane's defaults. The CNI network name differs too: libcni caches each attachment as
# /var/lib/cni/results/NETWORK-ID-IF whatever containerd's config says, and `down` clears its
# own network's entries by the prefix NETWORK-, which no other lane's entries may match: no
# name is another's with a dash and more after it (cri-harness- matches none of
# cri-harness17-... or cri-harness21-...).
case "${CRIH_CONTAINERD:-1.6}" in
1.6 | 1.6.20)
    LANE=1.6
    DEFAULT_STATE=/tmp/cri-harness-containerd
    DEFAULT_BRIDGE=crih0
    DEFAULT_SUBNET=10.88.0.0/16
    DEFAULT_HANDLERS="runsc crun"
    CNI_NETWORK="cri-harness"
    ;;
1.7 | 1.7.24)
    LANE=1.7
    DEFAULT_STATE=/tmp/cri-harness-containerd17
    DEFAULT_BRIDGE=crih1
    DEFAULT_SUBNET=10.89.0.0/16
    DEFAULT_HANDLERS=""
    CNI_NETWORK="cri-harness17"
    ;;
2.1 | 2.1.9)
    LANE=2.1
    DEFAULT_STATE=/tmp/cri-harness-containerd21
    DEFAULT_BRIDGE=crih3
    DEFAULT_SUBNET=10.91.0.0/16
    DEFAULT_HANDLERS=""
    CNI_NETWORK="cri-harness21"
    ;;
*) die "CRIH_CONTAINERD is 1.6, 1.7 or 2.1, not ${CRIH_CONTAINERD}" ;;
esac

STATE="${CRIH_STATE:-$DEFAULT_STATE}"
PORT="${CRIH_REGISTRY_PORT:-5000}"
NETNS="${CRIH_NETNS:-cri-harness}"
SHARED="${CRIH_SHARED:-/tmp/cri-harness-shared-$NETNS}"
BRIDGE="${CRIH_BRIDGE:-$DEFAULT_BRIDGE}"
SUBNET="${CRIH_POD_SUBNET:-$DEFAULT_SUBNET}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SOCK="$STATE/containerd.sock"
ENDPOINT="unix://$SOCK"
REGISTRY="127.0.0.1:$PORT"
SOCKET_UID="${CRIH_SOCKET_UID:-${SUDO_UID:-0}}"
SOCKET_GID="${CRIH_SOCKET_GID:-${SUDO_GID:-0}}"
SANDBOX_IMAGE="registry.k8s.io/pause:3.9"
read -r -a HANDLERS <<<"${CRIH_HANDLERS-$DEFAULT_HANDLERS}"
# Registry host namespaces that resolve to the local registry; `_default` catches any other.
MIRRORED_HOSTS=(registry.k8s.io docker.io _default)
CNI_PLUGINS=(bridge host-local portmap loopback)
# libcni caches each attachment's result here whatever containerd's config says.
CNI_CACHE="/var/lib/cni/results"
# This lane's entry in the shared register: a file named after its state directory.
USER_ENTRY="$SHARED/users/${STATE//\//_}"

# The 1.7 and 2.1 lanes' packages: Debian 13's and forky's, each pinned to this upstream
# version whatever Debian revision the archive has.
PKG_PACKAGE="containerd"
case "$LANE" in
1.7)
    PKG_VERSION="1.7.24"
    PKG_SUITE="trixie"
    ;;
2.1)
    PKG_VERSION="2.1.9"
    PKG_SUITE="forky"
    ;;
*)
    PKG_VERSION=""
    PKG_SUITE=""
    ;;
esac
PKG_PREFIX="${CRIH_CACHE:-/var/cache/cri-harness}/containerd-$PKG_VERSION"

if [[ -n "$PKG_VERSION" ]]; then
    # Its own bin directory first on containerd's PATH, so containerd starts the shim of its
    # own version (it looks a shim up on PATH before beside itself) and not Debian 12's in
    # /usr/bin.
    CONTAINERD_PATH="$PKG_PREFIX/usr/bin:$PATH"
    CONTAINERD="$PKG_PREFIX/usr/bin/containerd"
else
    CONTAINERD_PATH="$PATH"
    CONTAINERD="containerd"
fi

# The lane's ctr (ctr speaks to any of these versions, but `down` must work without the
# others').
ctr_bin() {
    if [[ -n "$PKG_VERSION" && -x "$PKG_PREFIX/usr/bin/ctr" ]]; then
        echo "$PKG_PREFIX/usr/bin/ctr"
    else
        echo ctr
    fi
}

if [[ "$NETNS" == host ]]; then
    NSPATH=""
    IN_NS=()
else
    NSPATH="/var/run/netns/$NETNS"
    # Joins only the network namespace: mounts stay visible to the host, so `down` can see
    # and undo them.
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
    if [[ "$LANE" == 1.6 ]]; then
        command -v containerd >/dev/null || missing+=(containerd)
        command -v ctr >/dev/null || missing+=(containerd)
    fi
    # Debian 12's runc serves the 1.7 and 2.1 lanes too (trixie's and forky's need a newer
    # glibc).
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

# The Debian archive this machine installs from, read from its own apt sources (one-line
# *.list and deb822 *.sources, in apt's order): the first enabled `deb` entry for this
# release's own suite with the main component. Prints a deb822 stanza for suite $1 of that
# archive with the same Signed-By (a keyring path, a list of them, or an inline key), so the
# archive key this machine trusts verifies it; Debian 12's keyring holds Debian 13's keys.
archive_stanza() {
    local suite="$1" codename files=()
    # shellcheck disable=SC1091
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
    [[ -n "$codename" ]] || die "no VERSION_CODENAME in /etc/os-release"
    [[ -f /etc/apt/sources.list ]] && files+=(/etc/apt/sources.list)
    local file
    for file in /etc/apt/sources.list.d/*; do
        [[ -f "$file" && ( "$file" == *.list || "$file" == *.sources ) ]] && files+=("$file")
    done
    ((${#files[@]})) || die "no apt sources in /etc/apt"
    awk -v codename="$codename" -v suite="$suite" '
        function has(list, word,    n, i, w) {
            n = split(list, w, /[ \t,]+/)
            for (i = 1; i <= n; i++) if (w[i] == word) return 1
            return 0
        }
        function emit(uri, signed) {
            print "Types: deb"
            print "URIs: " uri
            print "Suites: " suite
            print "Components: main"
            if (signed != "") print "Signed-By:" signed
            found = 1
            exit
        }
        # A deb822 stanza has ended: is it the archive?
        function stanza(    uris) {
            if (tolower(f["enabled"]) != "no" && has(f["types"], "deb") &&
                has(f["suites"], codename) && has(f["components"], "main")) {
                split(f["uris"], uris, /[ \t]+/)
                emit(uris[1], f["signed-by"])
            }
            delete f
            field = ""
        }
        FNR == 1 { if (field != "") stanza(); deb822 = FILENAME ~ /\.sources$/ }
        deb822 && /^[ \t]*#/ { next }
        deb822 && /^[ \t]*$/ { if (field != "") stanza(); next }
        # A continuation line (an inline key) stays as it is, indented.
        deb822 && /^[ \t]/ { if (field != "") f[field] = f[field] "\n" $0; next }
        deb822 {
            field = tolower($0); sub(/:.*/, "", field)
            value = $0; sub(/^[^:]*:/, "", value)
            # Signed-By keeps its leading space (and, for an inline key, its empty first line).
            if (field != "signed-by") gsub(/^[ \t]+|[ \t]+$/, "", value)
            f[field] = value
            next
        }
        # One-line: deb [ options ] uri suite component...
        {
            sub(/#.*/, "")
            if ($1 != "deb") next
            options = ""
            if (match($0, /\[[^]]*\]/)) {
                options = substr($0, RSTART + 1, RLENGTH - 2)
                $0 = substr($0, 1, RSTART - 1) substr($0, RSTART + RLENGTH)
            }
            if ($3 != codename) next
            main = 0
            for (i = 4; i <= NF; i++) if ($i == "main") main = 1
            if (!main) next
            signed = ""
            n = split(options, o, /[ \t]+/)
            for (i = 1; i <= n; i++) if (o[i] ~ /^signed-by=/) signed = " " substr(o[i], 11)
            emit($2, signed)
        }
        END { if (!found && field != "") stanza(); if (!found) exit 1 }
    ' "${files[@]}" ||
        die "no Debian archive for $codename (deb, suite $codename, component main) in ${files[*]}"
}

# True if $1 is a containerd binary that runs here and reports version $PKG_VERSION.
is_unpacked_containerd() {
    local version
    [[ -x "$1" ]] || return 1
    version="$("$1" --version 2>/dev/null | awk '{print $3}')" || return 1
    # Debian marks its repacked source after the upstream version: 1.7.24~ds1, 2.1.9+ds1.
    version="${version%%[~+]*}"
    [[ "$version" == "$PKG_VERSION" ]]
}

# Puts containerd $PKG_VERSION from Debian's $PKG_SUITE under PKG_PREFIX, once: apt-get
# download through a private source list, lists and cache (the system's apt state is not
# touched and the package is never installed), then dpkg-deb -x.
ensure_unpacked_containerd() {
    if is_unpacked_containerd "$PKG_PREFIX/usr/bin/containerd" &&
        [[ -x "$PKG_PREFIX/usr/bin/containerd-shim-runc-v2" ]]; then
        log "containerd $PKG_VERSION already unpacked in $PKG_PREFIX"
        return 0
    fi
    local work="$PKG_PREFIX.apt"
    rm -rf "$work" "$PKG_PREFIX.new"
    # A failed fetch leaves neither the private apt state nor a partial tree.
    # shellcheck disable=SC2064
    trap "rm -rf '$work' '$PKG_PREFIX.new'" EXIT
    mkdir -p "$work"/{lists/partial,cache/archives/partial,download}
    archive_stanza "$PKG_SUITE" >"$work/$PKG_SUITE.sources"
    # The hooks that follow an update (AppStream, PackageKit) would refresh system caches from
    # the system's lists; only the package index is needed.
    cat >"$work/apt.conf" <<'EOF'
#clear APT::Update::Post-Invoke-Success;
#clear APT::Update::Post-Invoke;
Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
Acquire::Languages "none";
EOF
    local apt_opts=(-c "$work/apt.conf"
        -o "Dir::Etc::SourceList=$work/$PKG_SUITE.sources" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache")
    log "fetching Debian $PKG_SUITE's package index ($(awk '/^URIs:/ {print $2}' "$work/$PKG_SUITE.sources"), side by side with the system's)"
    apt-get "${apt_opts[@]}" -qq update --error-on=any >&2 ||
        die "apt-get update of $PKG_SUITE failed (see above)"
    local offered version
    offered="$(apt-cache "${apt_opts[@]}" madison "$PKG_PACKAGE" | awk -F'|' '{gsub(/ /, "", $2); print $2}')"
    version="$(grep -m1 -E "^${PKG_VERSION//./\\.}[~+]" <<<"$offered" || true)"
    [[ -n "$version" ]] ||
        die "Debian $PKG_SUITE offers $PKG_PACKAGE ${offered//$'\n'/, } but not $PKG_VERSION"
    log "downloading $PKG_PACKAGE=$version"
    # apt fetches as _apt where that user exists; it must be able to write the file.
    if id _apt >/dev/null 2>&1; then chown _apt "$work/download"; fi
    (cd "$work/download" && apt-get "${apt_opts[@]}" -qq download "$PKG_PACKAGE=$version" >&2) ||
        die "apt-get download $PKG_PACKAGE=$version failed"
    local deb
    deb="$(find "$work/download" -name "${PKG_PACKAGE}_*.deb" | head -1)"
    [[ -n "$deb" ]] || die "apt-get download left no .deb in $work/download"
    dpkg-deb -x "$deb" "$PKG_PREFIX.new"
    is_unpacked_containerd "$PKG_PREFIX.new/usr/bin/containerd" ||
        die "the unpacked containerd does not run here or is not $PKG_VERSION: $("$PKG_PREFIX.new/usr/bin/containerd" --version 2>&1 || true)"
    [[ -x "$PKG_PREFIX.new/usr/bin/containerd-shim-runc-v2" ]] ||
        die "$deb has no containerd-shim-runc-v2"
    rm -rf "$PKG_PREFIX"
    mv "$PKG_PREFIX.new" "$PKG_PREFIX"
    rm -rf "$work"
    trap - EXIT
    log "unpacked $("$PKG_PREFIX/usr/bin/containerd" --version) in $PKG_PREFIX"
}

write_configs() {
    local cni_bin="$1"
    mkdir -p "$STATE"/{root,state,opt,runc,cni/net.d,cni/ipam}
    local handlers="" handler runc_binary="" nri="" runtimes='"io.containerd.grpc.v1.cri"'
    # Version 3 keeps the runtimes in the CRI runtime plugin of its own.
    [[ "$LANE" == 2.1 ]] && runtimes="'io.containerd.cri.v1.runtime'"
    for handler in "${HANDLERS[@]}"; do
        # A handler of its own name: the runc v2 shim driving that binary, with its own root
        # so `down` can find what it left.
        handlers+="
      [plugins.$runtimes.containerd.runtimes.$handler]
        runtime_type = \"io.containerd.runc.v2\"

        [plugins.$runtimes.containerd.runtimes.$handler.options]
          BinaryName = \"$(command -v "$handler")\"
          Root = \"$STATE/$handler\"
          SystemdCgroup = false
"
    done
    if [[ -n "$PKG_VERSION" ]]; then
        # Debian 12's runc: the unpacked version's shim runs it (trixie's and forky's runc
        # need glibc 2.38).
        local runc
        runc="$(command -v runc)" || die "no runc on PATH"
        "$runc" --version >/dev/null 2>&1 || die "$runc does not run here"
        runc_binary="
          BinaryName = \"$runc\""
    fi
    if [[ "$LANE" == 1.7 ]]; then
        # NRI is new in 1.7 and on by default; the harness tests CRI alone, and a plugin
        # socket shared with another containerd would be wrong anyway.
        nri="
  [plugins.\"io.containerd.nri.v1.nri\"]
    disable = true
"
    fi
    if [[ "$LANE" == 2.1 ]]; then
        write_config_v3 "$cni_bin" "$runc_binary" "$handlers"
    else
        write_config_v2 "$cni_bin" "$runc_binary" "$handlers" "$nri"
    fi
    write_network
}

# containerd 1.6's and 1.7's config (version 2: the whole CRI plugin is io.containerd.grpc.v1.cri).
write_config_v2() {
    local cni_bin="$1" runc_binary="$2" handlers="$3" nri="$4"
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

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]$runc_binary
          Root = "$STATE/runc"
          SystemdCgroup = false
$handlers
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$cni_bin"
      conf_dir = "$STATE/cni/net.d"
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$STATE/certs.d"
$nri
EOF
}

# containerd 2.1's config (version 3). The CRI settings of write_config_v2, each where 2.x reads
# it: the runtime side (handlers, CNI, OOM score, netns mounts) in io.containerd.cri.v1.runtime,
# the image side (snapshotter, sandbox image, registry hosts) in io.containerd.cri.v1.images,
# and only the streaming server left in io.containerd.grpc.v1.cri.
write_config_v3() {
    local cni_bin="$1" runc_binary="$2" handlers="$3"
    cat >"$STATE/config.toml" <<EOF
# Written by ci/containerd.sh: a containerd that shares no path or socket with a system one.
version = 3
root = "$STATE/root"
state = "$STATE/state"
# NRI is on by default and its socket (/var/run/nri) would be shared with any other
# containerd; the harness tests CRI alone. The other snapshotters cannot work here, and would
# only log their failure at every start.
disabled_plugins = [
  "io.containerd.nri.v1.nri",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
]

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
  [plugins.'io.containerd.internal.v1.opt']
    path = "$STATE/opt"

  [plugins.'io.containerd.cri.v1.runtime']
    # Without it runc fails to lower its own oom_score_adj in unprivileged VMs.
    restrict_oom_score_adj = true
    enable_selinux = false
    netns_mounts_under_state_dir = true

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]$runc_binary
          Root = "$STATE/runc"
          SystemdCgroup = false
$handlers
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$cni_bin"]
      conf_dir = "$STATE/cni/net.d"
      max_conf_num = 1

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$SANDBOX_IMAGE"

    # CRI's pulls go through the transfer service in 2.1, which is handed this directory.
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "$STATE/certs.d"

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
}

# The CNI network and the registry host tables, the same for every version.
write_network() {
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
}

# A state directory belongs to one lane: the other lane's `up` on it would start a second
# containerd on the same root. One made before there were lanes is 1.6's.
claim_state() {
    local owner=""
    if [[ -f "$STATE/lane" ]]; then
        owner="$(<"$STATE/lane")"
    elif [[ -f "$STATE/config.toml" ]]; then
        owner=1.6
    fi
    [[ -z "$owner" || "$owner" == "$LANE" ]] ||
        die "$STATE is the containerd $owner lane's; set CRIH_STATE for the $LANE lane"
    mkdir -p "$STATE"
    echo "$LANE" >"$STATE/lane"
}

# Enters this lane in the register of lanes that share the registry and the network namespace
# (the state directory of each lane that is up), and writes the registry's config. The
# registry answers on one port for all of them, in the namespace they share.
join_shared() {
    mkdir -p "$SHARED/users" "$SHARED/registry"
    if [[ -f "$SHARED/port" && "$(<"$SHARED/port")" != "$PORT" ]]; then
        die "the registry of $SHARED serves port $(<"$SHARED/port"), not $PORT: use that port, or set CRIH_SHARED and CRIH_NETNS for a registry and namespace of this lane's own"
    fi
    echo "$PORT" >"$SHARED/port"
    echo "$STATE" >"$USER_ENTRY"
    cat >"$SHARED/registry.yml" <<EOF
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

# Takes this lane out of the register. The last lane out stops the registry and removes the
# network namespace and the register; a lane whose state directory is gone is not up.
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
        # Deleting the namespace takes any veth left in it with it.
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
        # `ip netns add` makes its directory a mount point on first use; down undoes that
        # only if it was us.
        if ! mountpoint -q /run/netns 2>/dev/null; then
            touch "$SHARED/netns-dir-mounted-by-us"
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
    log "starting containerd $LANE (log: $STATE/containerd.log)"
    PATH="$CONTAINERD_PATH" "${IN_NS[@]}" "$CONTAINERD" --config "$STATE/config.toml" \
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
        "$(ctr_bin)" --address "$SOCK" plugins ls 2>/dev/null |
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
    claim_state
    install_packages
    [[ -z "$PKG_VERSION" ]] || ensure_unpacked_containerd
    local cni_bin bin
    cni_bin="$(cni_bin_dir)" || die "no CNI plugin directory with ${CNI_PLUGINS[*]}"
    write_configs "$cni_bin"
    join_shared
    ensure_netns
    bin="$(harness_bin)"
    start_registry
    push_images "$bin"
    start_containerd
    wait_cri "$bin"
    pull_images "$bin"
    check_registry_hosts || die "registry resolution is not hermetic"
    log "containerd $LANE up in $((SECONDS - started)) s; endpoint $ENDPOINT"
    echo "CONTAINER_RUNTIME_ENDPOINT=$ENDPOINT"
}

remove_pods() {
    live_pid "$STATE/containerd.pid" containerd >/dev/null || return 0
    [[ -S "$SOCK" ]] || return 0
    local bin out id ctr
    ctr="$(ctr_bin)"
    # The harness's own cleanup first: through CRI, so CNI releases every pod network.
    if bin="$(existing_harness_bin)"; then
        if out="$("$bin" clean -r "$ENDPOINT" 2>&1)"; then
            log "cri-harness clean: ${out:-done}"
        else
            log "cri-harness clean did not finish (${out##*$'\n'}); removing through ctr"
        fi
    fi
    # Whatever is left (pods made by hand, or before `clean` existed) goes through containerd
    # directly. That skips CNI DEL: the pod network namespaces go with STATE and the bridge
    # with delete_bridge below, and libcni's result cache (outside STATE) is cleared here.
    for id in $("$ctr" --address "$SOCK" -n k8s.io tasks ls 2>/dev/null | awk 'NR > 1 {print $1}'); do
        "$ctr" --address "$SOCK" -n k8s.io tasks delete --force "$id" >/dev/null 2>&1 || true
    done
    for id in $("$ctr" --address "$SOCK" -n k8s.io containers ls -q 2>/dev/null); do
        "$ctr" --address "$SOCK" -n k8s.io containers delete "$id" >/dev/null 2>&1 || true
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
# killed shim leaves its socket behind, named by the hash of address, namespace and id (and a
# second one, of that path and /debug, from a 2.x shim started with -debug).
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
        rm -f "/run/containerd/s/$(printf '%s' "$SOCK/$ns/$id" | sha256sum | cut -d' ' -f1)" \
            "/run/containerd/s/$(printf '%s' "$SOCK/$ns/$id/debug" | sha256sum | cut -d' ' -f1)"
    done
}

# Removes this lane's bridge and the pod ends still attached to it: the namespace may stay up
# for the other lane, so they no longer go with it.
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

# Stops this lane's containerd, removes its pods, shims, mounts, bridge and state directory;
# sets NOT_HERMETIC if containerd's log shows a registry host off this machine.
NOT_HERMETIC=0
down_lane() {
    remove_pods
    stop_pid "$STATE/containerd.pid" containerd 10
    # Checked again over the whole run, before the logs go with STATE.
    check_registry_hosts || NOT_HERMETIC=1
    if [[ -n "${CRIH_LOG_DIR:-}" ]]; then
        mkdir -p "$CRIH_LOG_DIR"
        # The registry's log so far, shared with the other lane if that one is up.
        cp "$STATE"/*.log "$SHARED"/*.log "$CRIH_LOG_DIR"/ 2>/dev/null || true
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
    # Deepest mounts first: container rootfs, sandbox shm and netns mounts all lie under STATE.
    local mnt
    for mnt in $(awk -v s="$STATE" 'index($2, s "/") == 1 {print $2}' /proc/self/mounts | sort -r); do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || log "cannot unmount $mnt"
    done
    delete_bridge
    rm -rf --one-file-system "$STATE"
    log "down: removed $STATE"
}

cmd_down() {
    [[ $EUID -eq 0 ]] || die "run as root"
    if [[ ! -d "$STATE" && ! -d "$SHARED" ]] && { [[ -z "$NSPATH" ]] || [[ ! -e "$NSPATH" ]]; }; then
        log "nothing to remove ($STATE does not exist)"
        return 0
    fi
    if [[ -d "$STATE" ]]; then
        if [[ -f "$STATE/lane" && "$(<"$STATE/lane")" != "$LANE" ]]; then
            die "$STATE is the containerd $(<"$STATE/lane") lane's, not $LANE's"
        fi
        down_lane
    else
        log "no containerd $LANE to remove ($STATE does not exist)"
    fi
    leave_shared
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
