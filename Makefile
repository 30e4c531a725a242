# Two commands for a newcomer:  make lab   |   make test
# Both set up what they need (Debian packages, a virtualenv in .venv) and reuse it afterwards.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
BUILD := build
COLLECTIONS := $(BUILD)/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/homecluster/infra
PYTEST_ARGS ?=
# Five workers, a work unit (a test file; a real-autoscaler file per version) per worker at a time, longest
# first (tests/suite_time.py); every run ends with its slowest units, their CPU, and the slowest tests
# (docs/testing.md). The suite mostly waits: four kept the cores 76-86 % busy where two kept them 56 %, and five
# ended 16-54 s sooner than four in three pairs of clean-clone runs of one commit (90 % busy; docs/testing.md
# "Workers"). PYTEST_WORKERS=0: serially.
PYTEST_WORKERS ?= 5

export ANSIBLE_COLLECTIONS_PATH := $(abspath $(COLLECTIONS))
# Python keeps the bytecode of what it compiles (our packages, pytest's rewritten test modules) in __pycache__
# folders (ignored by git, the collection build and the image inputs) even where the environment says not to:
# each of the suite's ~250 operator and lab processes and every pytest worker would otherwise compile them again.
unexport PYTHONDONTWRITEBYTECODE
# Debian packages the lab's VM image is built from, kept across clones on this machine.
export HOMECLUSTER_VM_DEB_CACHE ?= $(HOME)/.cache/homecluster/vm-debs

.PHONY: lab lab-k8s flux realnode test test-images test-install test-under-load setup system-deps venv collection crds proto unit clean k8s dist mutation images cert-manager

lab: setup
	$(BIN)/homecluster lab --demo

# The same lab on the real control plane (built by `make k8s` the first time: see docs/lab.md)
lab-k8s: setup k8s
	$(BIN)/homecluster lab --control-plane kubernetes --demo

# `make test K8S=` skips building the real control plane, Flux, the real node and the images (tests/k8s and
# tests/containers then skip, saying why).
K8S ?= k8s flux realnode test-images

# scripts/warm-test-cache.py first: the suite collected once per core, so that the workers find the rewritten test
# files in __pycache__ instead of each rewriting all of them (a fresh clone's run started ~20 s later without it).
test: setup $(K8S)
	$(BIN)/python scripts/warm-test-cache.py
	$(BIN)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

# The install matrix on the real node (docs/install.md, "What the real node proves"): the images run with runc,
# the operator and its Jobs as pods, helm install/upgrade/uninstall, cert-manager, the dist files, the chart's renders. One file at a
# time (one real node per machine). INSTALL_BUILDS= skips the builds (the tests then skip, naming what is missing).
INSTALL_BUILDS ?= k8s realnode images cert-manager
INSTALL_TESTS ?= tests/containers tests/install tests/k8s/test_k8s_realnode_*.py tests/k8s/test_k8s_helm*.py \
	tests/k8s/test_k8s_dist_lab.py tests/k8s/test_k8s_self_signed.py
test-install: setup $(INSTALL_BUILDS)
	$(BIN)/pytest -p no:randomly --durations=30 $(INSTALL_TESTS) $(PYTEST_ARGS)

# The same run with LOAD_CPUS stress-ng CPU workers competing for the cores at normal priority, stopped when
# the run ends: the suite must hold on a busy machine. Any part: make test-under-load PYTEST_ARGS=tests/lab
# Four test workers beside them, as every whole run under load so far was measured (issue 28).
LOAD_CPUS ?= 2
UNDER_LOAD_WORKERS ?= 4
test-under-load: setup $(K8S)
	$(BIN)/python scripts/warm-test-cache.py
	LOAD_CPUS=$(LOAD_CPUS) scripts/under-load.sh \
		$(BIN)/pytest -n $(UNDER_LOAD_WORKERS) --dist loadfile --no-loadscope-reorder --durations=30 $(PYTEST_ARGS)

setup: system-deps venv collection

system-deps:
	@scripts/system-deps.sh

venv: $(STAMP)

# Both distributions, editable: the operator (homecluster, with the test extras) and the lab
# (homecluster-lab, lab/pyproject.toml), which adds `homecluster lab` and `homecluster vm-image`.
# scripts/venv.sh installs them with uv (kept outside the checkout), pip where uv cannot be had.
$(STAMP): pyproject.toml lab/pyproject.toml scripts/venv.sh
	PYTHON=$(PYTHON) VENV=$(VENV) scripts/venv.sh
	touch $(STAMP)

# The repository root is the collection homecluster.infra; Ansible finds it through this link.
collection: $(COLLECTION_LINK)

$(COLLECTION_LINK):
	mkdir -p $(dir $@)
	ln -sfn $(abspath .) $@

# The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl) built
# from lab/k8s, and helm from lab/helm (a module of its own: its client libraries follow helm), into ~/.cache/homecluster/k8s/<key>/bin, at idle CPU priority; a no-op when built.
# Cold: see docs/lab.md ("The real control plane").
k8s:
	@scripts/build-k8s.sh lab/k8s
	@scripts/build-k8s.sh lab/helm

# Flux's source-controller and kustomize-controller (lab/flux) and their CRDs and RBAC from the same modules,
# the same way and cache; the GitOps tests run them (cold: see docs/gitops.md).
flux:
	@scripts/build-k8s.sh lab/flux

# The controller and runner images, built here without a registry from Debian's packages, PyPI and the
# collection tarball, into ~/.cache/homecluster/images (docs/images.md; cold and warm times there). An image
# whose inputs did not change since its last build is not built again (a second or two).
images: setup
	@scripts/build-images.sh

# What `make test` builds of them: the same, where this machine can (root, Debian's tools); elsewhere a line
# saying why, and tests/containers and the real node's image tests skip, naming it.
test-images: setup
	@scripts/build-images.sh --if-possible

# The lab's real node (docs/lab.md): kubelet, kube-proxy (the same Kubernetes release as `make k8s`, from
# lab/k8s-node) and the pod sandbox's pause program, into ~/.cache/homecluster/k8s/<key>/bin. Not part of `make k8s`.
realnode:
	@scripts/build-k8s.sh lab/k8s-node

# cert-manager's controller and cainjector for the real node (lab/cert-manager: small mains over cert-manager's own
# packages, the Go module pinned there) and its CRDs from the same module, into ~/.cache/homecluster/k8s/<key>.
# Not part of `make k8s` (nor of `make test`); `make test-install` builds it.
cert-manager:
	@scripts/build-k8s.sh lab/cert-manager

crds: venv
	$(BIN)/homecluster crds

# The generated install artifacts: dist/install.yaml (kubectl kustomize config/default) and the chart's
# copy of the CRDs (charts/homecluster/crds). tests/install/test_dist.py fails when they are stale.
dist: venv
	$(BIN)/python scripts/make-dist.py

proto: venv
	$(BIN)/homecluster proto

# Mutation testing of one layer (model or lifecycle) with mutmut: long (the lifecycle layer: hours on 2 cores),
# so not part of `make test`; figures in docs/reliability.md. MIN_KILLED=85 makes it fail below 85 % killed.
# SAMPLE=300 SAMPLE_SEED=2 runs 300 of the layer's mutants drawn at random and estimates its share (95 % interval);
# MODULES=recorder,slotevents draws them from those modules only.
LAYER ?= lifecycle
MIN_KILLED ?= 0
SAMPLE ?= 0
SAMPLE_SEED ?= 1
MODULES ?=
mutation: venv
	$(BIN)/python scripts/mutation.py --layer $(LAYER) --min-killed $(MIN_KILLED) --sample $(SAMPLE) --sample-seed $(SAMPLE_SEED) --modules "$(MODULES)"

# the pure tests: the rules' (tests/model) and the components' (tests/unit); no server, no lab
unit: venv
	$(BIN)/pytest tests/model tests/unit $(PYTEST_ARGS)

clean:
	rm -rf $(BUILD) $(VENV)
