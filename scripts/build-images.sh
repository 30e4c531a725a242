#!/usr/bin/env bash
# `make images`: build the controller and runner images here, with no container registry (docs/images.md).
#  1. a Debian bookworm base from Debian's packages (mmdebstrap), imported with buildah as localhost/homecluster-base;
#  2. the collection tarball (ansible-galaxy collection build);
#  3. images/controller/Containerfile and images/runner/Containerfile -- the files users build on the public
#     python image -- with BASE set to the local base; the wheels come from PyPI;
#  4. each image as an OCI archive (for containerd: `ctr images import`) and unpacked as a runtime bundle
#     (rootfs + config.json, for runc), tagged as the chart and dist/ name them: the project's version, never latest.
# Everything lands in HOMECLUSTER_IMAGES_DIR (default ~/.cache/homecluster/images), outside the checkout.
# Needs root (buildah's chroot isolation, umoci unpack) and mmdebstrap, buildah and umoci (Debian's, installed by
# scripts/system-deps.sh). Warm: the base tarball and buildah's layer cache are reused, and an image whose inputs
# (its Containerfile, the base, and the files it copies) are those of its last build is not built again.
# --if-possible (`make test`): where the images cannot be built here (not root, a tool missing), say why and exit 0;
# the tests that run them then skip, naming what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
IF_POSSIBLE=false
[ "${1:-}" = "--if-possible" ] && IF_POSSIBLE=true
OUT=${HOMECLUSTER_IMAGES_DIR:-$HOME/.cache/homecluster/images}
REGISTRY=ghcr.io/homecluster-dev
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -n 1)
GALAXY_VERSION=$(sed -n 's/^version: *//p' galaxy.yml)
# The Debian packages of the base: python3.11 with `python` and venv, as the public python image has them.
BASE_PACKAGES=python3,python3-venv,python-is-python3,ca-certificates
BASE_IMAGE=localhost/homecluster-base:bookworm
START=$(date +%s)

step() { echo "[images +$(( $(date +%s) - START ))s] $*"; }
fail() { echo "error: $*" >&2; exit 1; }
# a reason this machine cannot build the images: an error, or with --if-possible a note and success
cannot() {
  if $IF_POSSIBLE; then echo "images: not built ($*); the tests that run them skip, naming it"; exit 0; fi
  fail "$*"
}

[ "$(id -u)" -eq 0 ] || cannot "scripts/build-images.sh runs as root (buildah's chroot isolation and umoci unpack need it)"
[ "$VERSION" = "$GALAXY_VERSION" ] || fail "pyproject.toml's version $VERSION and galaxy.yml's $GALAXY_VERSION differ; the runner's tag is the operator's version"

for tool in mmdebstrap buildah umoci; do
  command -v "$tool" >/dev/null || cannot "$tool is missing: scripts/system-deps.sh installs it (make images runs it)"
done
[ -x .venv/bin/ansible-galaxy ] || fail ".venv/bin/ansible-galaxy is missing: run make setup"

mkdir -p "$OUT/base" "$OUT/oci" "$OUT/bundles"
BUILDAH=(buildah --root "$OUT/storage" --runroot "$OUT/run" --storage-driver vfs)

# 1. the base, rebuilt when its package list changes (key: the list's hash)
key=$(echo "bookworm $BASE_PACKAGES" | sha256sum | cut -c1-12)
tarball="$OUT/base/bookworm-$key.tar"
if [ ! -s "$tarball" ]; then
  step "base: mmdebstrap bookworm minbase + $BASE_PACKAGES (Debian's packages, a few minutes)"
  mmdebstrap --quiet --format=tar --variant=minbase --include="$BASE_PACKAGES" bookworm "$tarball.part" http://deb.debian.org/debian
  mv "$tarball.part" "$tarball"
fi
if [ "$("${BUILDAH[@]}" inspect --type image --format '{{index .ImageAnnotations "homecluster.base.key"}}' "$BASE_IMAGE" 2>/dev/null)" != "$key" ]; then
  step "base: importing $tarball as $BASE_IMAGE"
  ctr=$("${BUILDAH[@]}" from scratch)
  "${BUILDAH[@]}" add "$ctr" "$tarball" / >/dev/null
  "${BUILDAH[@]}" config --annotation "homecluster.base.key=$key" --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash "$ctr"
  "${BUILDAH[@]}" commit -q --rm "$ctr" "$BASE_IMAGE" >/dev/null
fi

# 2. the collection tarball the runner's Containerfile copies
step "collection: ansible-galaxy collection build"
mkdir -p build
.venv/bin/ansible-galaxy collection build --force --output-path build/ . >/dev/null
# ansible-galaxy stamps the build time into the tarball; replaced only when its files changed, so that an
# unchanged collection keeps the runner's COPY layer (and every later one) in the cache
content() { { tar -tzf "$1"; tar -xzOf "$1"; } | sha256sum; }
new="build/homecluster-infra-$VERSION.tar.gz"
if [ ! -f build/homecluster-infra.tar.gz ] || [ "$(content "$new")" != "$(content build/homecluster-infra.tar.gz)" ]; then
  cp "$new" build/homecluster-infra.tar.gz
fi

# The build's RUN steps see this machine's CA bundle and pip configuration (a TLS-intercepting proxy's CA, a
# mirror), mounted read-only for the build only: nothing of them is committed into a layer.
MOUNTS=()
for f in /etc/ssl/certs/ca-certificates.crt /etc/pip.conf; do
  [ -f "$f" ] && MOUNTS+=("--volume=$f:$f:ro")
done

# An image's inputs, hashed: what its Containerfile copies (the files .containerignore leaves in), the
# Containerfile, the base's key and the tag. Equal to the key its last build left beside its exports: nothing
# to build.
CONTROLLER_COPIES="pyproject.toml README.md controller"
RUNNER_COPIES="requirements.txt images/runner/ansible.cfg"
copied() {
  if [ "$1" = runner ]; then echo "$RUNNER_COPIES" | tr ' ' '\n'; return; fi
  # shellcheck disable=SC2086 # the list is words
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then git ls-files -co --exclude-standard -- $CONTROLLER_COPIES
  else find $CONTROLLER_COPIES -type f; fi | grep -v -e '__pycache__/' -e '\.pyc$' -e '\.egg-info/'
}
inputs_key() {
  { echo "$1 $VERSION base=$key"; sha256sum "images/$1/Containerfile"
    copied "$1" | LC_ALL=C sort | while read -r f; do [ -f "$f" ] && sha256sum "$f"; done
    if [ "$1" = runner ]; then content build/homecluster-infra.tar.gz; fi
  } | sha256sum | cut -c1-16
}

# 3. the images, from the Containerfiles users build; 4. exported
BUILT=false
for name in controller runner; do
  image="$REGISTRY/homecluster-$name:$VERSION"
  archive="$OUT/oci/homecluster-$name-$VERSION.tar"
  bundle="$OUT/bundles/homecluster-$name-$VERSION"
  stamp="$OUT/oci/homecluster-$name-$VERSION.inputs"
  inputs=$(inputs_key "$name")
  if [ -s "$archive" ] && [ -f "$bundle/config.json" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$inputs" ]; then
    step "$name: up to date (inputs $inputs, as its last build); $archive"
    continue
  fi
  rm -f "$stamp"
  t0=$(date +%s)
  step "$name: buildah bud -f images/$name/Containerfile --build-arg BASE=$BASE_IMAGE -t $image"
  "${BUILDAH[@]}" bud --quiet --layers --isolation chroot --network host --pull=never "${MOUNTS[@]}" \
    --build-arg BASE="$BASE_IMAGE" -f "images/$name/Containerfile" -t "$image" . >/dev/null
  rm -f "$archive"
  "${BUILDAH[@]}" push -q "$image" "oci-archive:$archive:$image"
  # the bundle: a plain OCI layout (umoci's tags are simple names) unpacked into rootfs/ + config.json
  layout="$OUT/oci/layout-$name"
  rm -rf "$layout"
  "${BUILDAH[@]}" push -q "$image" "oci:$layout:$VERSION"
  rm -rf "$bundle"
  umoci unpack --image "$layout:$VERSION" "$bundle" >/dev/null
  rm -rf "$layout"
  size=$("${BUILDAH[@]}" images --format '{{.Size}}' "$image" | head -n 1)
  echo "$inputs" > "$stamp"
  BUILT=true
  step "$name: $image built in $(( $(date +%s) - t0 ))s, $size; $archive; bundle $bundle"
done
# A build leaves the image it replaced untagged, and the vfs store keeps a full copy of every layer: without
# this, `storage/` grew by gigabytes at every rebuild (34 GB after a day of them). The layers the current
# images are made of stay, so the next build still finds them in its cache. Best effort: an image that a
# working container still holds (a build stopped half-way) stays, and the build has succeeded all the same.
if $BUILT; then
  step "pruning the images the builds replaced"
  if ! pruned=$("${BUILDAH[@]}" rmi --prune 2>&1 >/dev/null); then
    step "some replaced images stay: $(echo "$pruned" | grep -v '^[[:space:]]*$' | tail -n 1)"
    step "(\`buildah --root $OUT/storage --runroot $OUT/run --storage-driver vfs containers\` lists what holds them)"
  fi
fi
step "done in $(( $(date +%s) - START ))s"
