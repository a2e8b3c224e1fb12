#!/usr/bin/env bash
# A one-node Kubernetes on Skiff: etcd, kube-apiserver and a kubelet whose runtime and image services are
# Skiff's two sockets, built by scripts/kube-tools.sh. No scheduler, controller manager or kube-proxy: pods
# name their node (spec.nodeName).
#
#   scripts/kube-node.sh up       start it (Skiff must be running: scripts/setup.sh) and wait for the node to be Ready
#   scripts/kube-node.sh down     stop it: the kubelet, the API server and etcd (pods stay in Skiff), unmount and
#                                 remove its directory
#   scripts/kube-node.sh status   what runs, by pid
#   scripts/kube-node.sh restart-kubelet   stop the kubelet and start it again, as an upgrade or a crash would
#
# Then: export KUBECONFIG=/var/lib/skiff-kube-node/kubeconfig; "$(scripts/kube-tools.sh)/kubectl" get nodes
#
# Settings (environment):
#   KUBE_NODE_DIR               state, certificates, logs, kubeconfig          /var/lib/skiff-kube-node
#   KUBE_NODE_NAME              the node's name; the API server reaches the kubelet by it, so it must
#                               resolve to a loopback address                  localhost
#   KUBE_NODE_RUNTIME_ENDPOINT  Skiff's RuntimeService                         unix:///run/skiff/runtime.sock
#   KUBE_NODE_IMAGE_ENDPOINT    Skiff's ImageService                           unix:///run/skiff/image.sock
#   KUBE_NODE_ETCD_PORT, KUBE_NODE_ETCD_PEER_PORT, KUBE_NODE_API_PORT, KUBE_NODE_KUBELET_PORT,
#   KUBE_NODE_HEALTHZ_PORT      loopback ports              2379, 2380, 6443, 10250, 10248
#   KUBE_NODE_CGROUP_ROOT       the kubelet's cgroup root (its pods go under <root>/kubepods)    /skiff-kube-node
#   KUBE_NODE_STANDALONE=1      the kubelet alone, with no API server: static pods from <dir>/manifests
#   KUBE_NODE_KUBELET_CONFIG    further top-level KubeletConfiguration keys (YAML lines), appended
#   KUBE_NODE_EVICTION_HARD     the kubelet's evictionHard thresholds, as a YAML flow mapping's content
#                               (default: none that a test machine reaches)
set -euo pipefail

cd "$(dirname "$0")/.."
DIR=${KUBE_NODE_DIR:-/var/lib/skiff-kube-node}
NODE_NAME=${KUBE_NODE_NAME:-localhost}
RUNTIME_ENDPOINT=${KUBE_NODE_RUNTIME_ENDPOINT:-unix:///run/skiff/runtime.sock}
IMAGE_ENDPOINT=${KUBE_NODE_IMAGE_ENDPOINT:-unix:///run/skiff/image.sock}
ETCD_PORT=${KUBE_NODE_ETCD_PORT:-2379}
ETCD_PEER_PORT=${KUBE_NODE_ETCD_PEER_PORT:-2380}
API_PORT=${KUBE_NODE_API_PORT:-6443}
KUBELET_PORT=${KUBE_NODE_KUBELET_PORT:-10250}
HEALTHZ_PORT=${KUBE_NODE_HEALTHZ_PORT:-10248}
CGROUP_ROOT=${KUBE_NODE_CGROUP_ROOT:-/skiff-kube-node}
STANDALONE=${KUBE_NODE_STANDALONE:-0}
SERVICES=(etcd kube-apiserver kubelet)

log() { echo "kube-node: $*" >&2; }

# SKIFF_KUBE_TOOLS_BIN names tools built earlier; otherwise kube-tools.sh builds them (or finds its cache).
tools_bin() {
  if [ -n "${SKIFF_KUBE_TOOLS_BIN:-}" ]; then echo "$SKIFF_KUBE_TOOLS_BIN"; else bash scripts/kube-tools.sh; fi
}

pid_of() {
  local pidfile="$DIR/run/$1.pid"
  [ -f "$pidfile" ] || return 1
  local pid
  pid=$(cat "$pidfile")
  # The pid is ours only while it still runs the binary we started (a recycled pid is not).
  [ -n "$pid" ] && [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(cat "$DIR/run/$1.exe" 2>/dev/null)" ] || return 1
  echo "$pid"
}

# start_service NAME BINARY ARGS...: in its own session, its output to logs/NAME.log.
start_service() {
  local name=$1 exe=$2
  shift 2
  setsid "$exe" "$@" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$DIR/run/$name.pid"
  readlink -f "$exe" >"$DIR/run/$name.exe"
}

wait_for() {
  local what=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout)) name
  until "$@" >/dev/null 2>&1; do
    for name in "${SERVICES[@]}"; do
      if [ -f "$DIR/run/$name.pid" ] && ! pid_of "$name" >/dev/null; then
        log "$name exited while waiting for $what: $(tail -n 5 "$DIR/logs/$name.log")"
        return 1
      fi
    done
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$what did not happen within ${timeout}s; logs are in $DIR/logs"
      return 1
    fi
    sleep 0.5
  done
}

stop_service() {
  local name=$1 pid
  pid=$(pid_of "$name") || { rm -f "$DIR/run/$name.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -KILL "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.2
  done
  rm -f "$DIR/run/$name.pid"
}

make_certificates() {
  local pki=$DIR/pki
  [ -f "$pki/ca.crt" ] && return 0
  install -d -m 0700 "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=skiff-kube-node-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' >"$pki/apiserver.ext"
  openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$pki/apiserver.ext" -out "$pki/apiserver.crt" 2>/dev/null
  openssl genrsa -out "$pki/service-account.key" 2048 2>/dev/null
  openssl rsa -in "$pki/service-account.key" -pubout -out "$pki/service-account.pub" 2>/dev/null
  # One bearer token each for the operator (cluster admin) and the kubelet; the API server authorizes everything.
  printf '%s,admin,admin,system:masters\n%s,system:node:%s,kubelet,system:nodes\n' \
    "$(openssl rand -hex 16)" "$(openssl rand -hex 16)" "$NODE_NAME" >"$pki/tokens.csv"
  chmod 0600 "$pki"/*
}

write_kubeconfig() {
  local file=$1 user=$2 token
  token=$(awk -F, -v u="$user" '$2 == u { print $1 }' "$DIR/pki/tokens.csv")
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: skiff-kube-node
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority: $DIR/pki/ca.crt
users:
- name: $user
  user:
    token: $token
contexts:
- name: skiff-kube-node
  context: {cluster: skiff-kube-node, user: $user}
current-context: skiff-kube-node
EOF
  chmod 0600 "$file"
}

write_kubelet_config() {
  cat >"$DIR/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: $RUNTIME_ENDPOINT
imageServiceEndpoint: $IMAGE_ENDPOINT
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
# This machine has cgroup v1 (hybrid); from 1.35 the kubelet refuses it unless told otherwise.
failCgroupV1: false
failSwapOn: false
address: 127.0.0.1
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
# The API server proxies exec, attach, port-forward and logs here as an anonymous client.
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
staticPodPath: $DIR/manifests
volumePluginDir: $DIR/volume-plugins
fileCheckFrequency: 2s
podLogsDir: $DIR/pods-logs
tlsCertFile: $DIR/pki/kubelet.crt
tlsPrivateKeyFile: $DIR/pki/kubelet.key
resolvConf: /etc/resolv.conf
serializeImagePulls: false
# The node is small and shared with its tests: no eviction for disk or memory pressure.
evictionHard: {${KUBE_NODE_EVICTION_HARD:-memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}}
EOF
  if [ -n "${KUBE_NODE_KUBELET_CONFIG:-}" ]; then
    printf '%s\n' "$KUBE_NODE_KUBELET_CONFIG" >>"$DIR/kubelet-config.yaml"
  fi
  if [ ! -f "$DIR/pki/kubelet.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$NODE_NAME" \
      -addext "subjectAltName=DNS:$NODE_NAME,IP:127.0.0.1" \
      -keyout "$DIR/pki/kubelet.key" -out "$DIR/pki/kubelet.crt" 2>/dev/null
    chmod 0600 "$DIR/pki/kubelet.key"
  fi
}

make_cgroup_root() {
  # The kubelet wants its cgroup root to exist in every hierarchy it uses.
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [ -L "${hierarchy%/}" ] && continue
    [ -e "$hierarchy/cgroup.procs" ] || continue
    mkdir -p "$hierarchy${CGROUP_ROOT#/}"
  done
}

api_ready() {
  "$KUBECTL" --kubeconfig "$DIR/kubeconfig" get --raw /readyz >/dev/null
}

node_ready() {
  "$KUBECTL" --kubeconfig "$DIR/kubeconfig" get node "$NODE_NAME" \
    -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -qx True
}

kubelet_healthy() {
  curl -fsS "http://127.0.0.1:$HEALTHZ_PORT/healthz" >/dev/null
}

up() {
  local bin
  bin=$(tools_bin)
  KUBECTL=$bin/kubectl
  for name in "${SERVICES[@]}"; do
    if pid_of "$name" >/dev/null; then
      log "$name already runs (pid $(pid_of "$name")); 'down' first"
      exit 1
    fi
  done
  install -d -m 0700 "$DIR"
  install -d -m 0700 "$DIR/run" "$DIR/logs" "$DIR/etcd" "$DIR/kubelet"
  install -d -m 0755 "$DIR/manifests" "$DIR/pods-logs"
  make_certificates
  write_kubelet_config
  # The kubelet's device manager always listens in /var/lib/kubelet/device-plugins; 'down' removes what it made there.
  [ -e /var/lib/kubelet ] || touch "$DIR/made-var-lib-kubelet"
  make_cgroup_root

  if [ "$STANDALONE" != 1 ]; then
    start_service etcd "$bin/etcd" --name skiff-kube-node --data-dir "$DIR/etcd" \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster "skiff-kube-node=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync \
      --listen-metrics-urls "" --log-level warn
    start_service kube-apiserver "$bin/kube-apiserver" \
      --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
      --secure-port "$API_PORT" --tls-cert-file "$DIR/pki/apiserver.crt" --tls-private-key-file "$DIR/pki/apiserver.key" \
      --client-ca-file "$DIR/pki/ca.crt" --token-auth-file "$DIR/pki/tokens.csv" --authorization-mode AlwaysAllow \
      --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$DIR/pki/service-account.pub" \
      --service-account-signing-key-file "$DIR/pki/service-account.key" --service-cluster-ip-range 10.96.0.0/24 \
      --disable-admission-plugins ServiceAccount --kubelet-preferred-address-types Hostname \
      --endpoint-reconciler-type none \
      --allow-privileged=true --enable-priority-and-fairness=false
    write_kubeconfig "$DIR/kubeconfig" admin
    write_kubeconfig "$DIR/kubelet.kubeconfig" "system:node:$NODE_NAME"
    wait_for "the API server answering" 90 api_ready || { stop_services; exit 1; }
  fi
  start_kubelet "$bin"
  log "up: KUBECONFIG=$DIR/kubeconfig, kubectl at $KUBECTL"
}

start_kubelet() {
  local bin=$1
  local args=(--config "$DIR/kubelet-config.yaml" --root-dir "$DIR/kubelet" --cert-dir "$DIR/pki"
    --hostname-override "$NODE_NAME" --v 2)
  [ "$STANDALONE" = 1 ] || args+=(--kubeconfig "$DIR/kubelet.kubeconfig")
  start_service kubelet "$bin/kubelet" "${args[@]}"
  if [ "$STANDALONE" = 1 ]; then
    wait_for "the kubelet's health check" 90 kubelet_healthy || { stop_services; exit 1; }
  else
    wait_for "node $NODE_NAME becoming Ready" 120 node_ready || { stop_services; exit 1; }
  fi
  # The kubelet only logs a configuration key it does not know, and runs without it.
  if grep -q 'strict decoding failed' "$DIR/logs/kubelet.log"; then
    log "the kubelet did not understand $DIR/kubelet-config.yaml: $(grep -o 'strict decoding error: .*' "$DIR/logs/kubelet.log" | tail -n 1)"
    stop_services
    exit 1
  fi
}

restart_kubelet() {
  local bin
  bin=$(tools_bin)
  KUBECTL=$bin/kubectl
  stop_service kubelet
  start_kubelet "$bin"
}

unmount_under() {
  # Deepest first; the kubelet's volume mounts (tmpfs for secrets and projected volumes) live under its root.
  local target
  while read -r target; do
    umount --no-canonicalize -l "$target" 2>/dev/null || true
  done < <(awk -v d="$DIR/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
}

stop_services() {
  local i
  for ((i = ${#SERVICES[@]} - 1; i >= 0; i--)); do stop_service "${SERVICES[$i]}"; done
}

down() {
  stop_services
  [ -d "$DIR" ] || return 0
  if [ -e "$DIR/made-var-lib-kubelet" ]; then
    rm -f /var/lib/kubelet/device-plugins/kubelet.sock
    rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet 2>/dev/null || true
  fi
  unmount_under
  rm -rf --one-file-system "$DIR"
  local hierarchy
  for hierarchy in /sys/fs/cgroup/*/; do
    [ -d "$hierarchy${CGROUP_ROOT#/}" ] || continue
    find "$hierarchy${CGROUP_ROOT#/}" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  log "down"
}

status() {
  local name pid
  for name in "${SERVICES[@]}"; do
    if pid=$(pid_of "$name"); then echo "$name: running (pid $pid)"; else echo "$name: not running"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  restart-kubelet) restart_kubelet ;;
  status) status ;;
  *) echo "usage: $0 up|down|status|restart-kubelet" >&2; exit 2 ;;
esac
