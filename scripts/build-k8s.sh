#!/usr/bin/env bash
# Build the real control plane's binaries (lab/k8s: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl; lab/helm: helm) from a pinned Go module, only those that are missing.
#
#   scripts/build-k8s.sh [MODULE_DIR]      (default lab/k8s; `make k8s` runs it for lab/k8s and lab/helm)
#
# Output: $HOMECLUSTER_K8S_CACHE (default ~/.cache/homecluster/k8s)/<key>/bin, where <key> is the
# first 16 hex digits of sha256(go.mod + go.sum): a change of pins builds into a new directory,
# and lab/homecluster_lab/k8s/binaries.py finds the same directory the same way.
# The Go module and build caches stay where Go keeps them (GOMODCACHE, GOCACHE: under ~, outside
# the checkout). Every build runs at idle CPU priority (SCHED_IDLE, nice 19) so that it never
# starves the tests and builds sharing the machine; it takes whatever CPU is left.
#
# MODULE_DIR/binaries lists what to build: one line per binary, "name package [build tags]".
# MODULE_DIR/manifests (optional) lists folders to copy out of the pinned modules next to bin/ (lab/flux: the
# controllers' CRDs and RBAC, taken from the same module versions as the binaries): "dest module folder".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
module=$(cd "${1:-$root/lab/k8s}" && pwd)
key=$(cat "$module/go.mod" "$module/go.sum" | sha256sum | cut -c1-16)
bin=${HOMECLUSTER_K8S_CACHE:-$HOME/.cache/homecluster/k8s}/$key/bin
mkdir -p "$bin"

# Lowest priority: SCHED_IDLE ignores the session's autogroup, which nice alone does not.
idle=(nice -n 19)
if chrt -i 0 true 2>/dev/null; then idle=(chrt -i 0 nice -n 19); fi

missing=()
while read -r name pkg tags; do
  case "$name" in ''|'#'*) continue ;; esac
  [ -x "$bin/$name" ] || missing+=("$name|$pkg|$tags")
done < "$module/binaries"
manifests=$(dirname "$bin")/manifests
copy_manifests() {
  [ -f "$module/manifests" ] && [ ! -f "$manifests/.complete" ] || return 0
  echo "build-k8s: copying manifests from the pinned modules into $manifests ..."
  (cd "$module" && "${idle[@]}" go mod download)
  rm -rf "$manifests.partial.$$" && mkdir -p "$manifests.partial.$$"
  while read -r dest mod folder; do
    case "$dest" in ''|'#'*) continue ;; esac
    dir=$(cd "$module" && go list -m -f '{{.Dir}}' "$mod")
    mkdir -p "$manifests.partial.$$/$dest"
    cp -R "$dir/$folder/." "$manifests.partial.$$/$dest/"
  done < "$module/manifests"
  chmod -R u+w "$manifests.partial.$$" && touch "$manifests.partial.$$/.complete"
  rm -rf "$manifests" && mv "$manifests.partial.$$" "$manifests"
}
if [ ${#missing[@]} -eq 0 ]; then
  copy_manifests
  echo "build-k8s: all binaries present in $bin"
  exit 0
fi
if ! command -v go >/dev/null; then
  echo "build-k8s: no 'go' on PATH; install Go >= 1.25 (https://go.dev/dl/) to build the real control plane, or run the tests without it: make test K8S=" >&2
  exit 2
fi

cd "$module"
start=$(date +%s)
echo "build-k8s: modules for ${#missing[@]} binaries (cold: under a minute, ~600 MB) ..."
"${idle[@]}" go mod download
echo "build-k8s: modules ready in $(( $(date +%s) - start ))s"

# Built from modules, the binaries would report v0.0.0-master (kubectl version, /version, skew checks):
# stamp the release of k8s.io/kubernetes that go.mod pins, as the Kubernetes release build does.
# (The linker ignores -X for packages a binary does not contain: etcd.)
ldflags="-s -w"
kube=$(go list -m -f '{{.Version}}|{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes 2>/dev/null || true)
if [ -n "$kube" ]; then
  version=${kube%%|*}; stamp=${kube#*|}
  minor=${version#v1.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$stamp"
  done
fi

# helm (lab/helm) stamps its own release and the Kubernetes minor of its client libraries, as helm's
# Makefile does: `helm version` tells the truth and `helm template` renders for that Kubernetes
# (.Capabilities.KubeVersion), not for the v1.20 a plain build defaults to.
helm=$(go list -m -f '{{.Version}}' helm.sh/helm/v3 2>/dev/null || true)
if [ -n "$helm" ]; then
  ldflags+=" -X helm.sh/helm/v3/internal/version.version=$helm -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  client=$(go list -m -f '{{.Version}}' k8s.io/client-go)
  cminor=${client#v0.}; cminor=${cminor%%.*}
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$cminor"
  done
fi

# cert-manager (lab/cert-manager) stamps its release, as its Makefile does: the user agent (and so the field
# manager of its server-side applies) and the version it logs name v1.x, not "canary".
certmanager=$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager 2>/dev/null || true)
if [ -n "$certmanager" ]; then
  ldflags+=" -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$certmanager -X github.com/cert-manager/cert-manager/pkg/util.AppGitState=clean"
fi

for entry in "${missing[@]}"; do
  IFS='|' read -r name pkg tags <<<"$entry"
  t0=$(date +%s)
  echo "build-k8s: building $name ($pkg${tags:+, tags $tags}) ..."
  # a partial file of this run's own, renamed when complete: two builds at once never see half a binary
  "${idle[@]}" go build -trimpath -ldflags="$ldflags" ${tags:+-tags "$tags"} -o "$bin/.$name.partial.$$" "$pkg"
  mv "$bin/.$name.partial.$$" "$bin/$name"
  echo "build-k8s: $name built in $(( $(date +%s) - t0 ))s"
done
copy_manifests
echo "build-k8s: done in $(( $(date +%s) - start ))s -> $bin"
