"""`homecluster lab --control-plane kubernetes --gitops`: the real-control-plane lab whose pool Flux owns.

What RealLabCluster starts, except that the pool's Group and slots are not created by the lab: they are
committed to a Git repository in the lab's folder (<workdir>/git/pool, a clone of <workdir>/git/pool.git),
served on loopback over Git's smart HTTP protocol (gitserver.py), and applied by the real Flux
(source-controller + kustomize-controller, flux.py) from a GitRepository and a Kustomization with
`prune: true` and a 10 s interval. The slots' Secrets are created by the lab (pool_repo.py says why).
"""
from __future__ import annotations

import base64
import copy
from typing import Any

import yaml

from homecluster_lab import topology
from homecluster_lab.faultknobs import FaultSync

from ..labcluster import RealLabCluster, _runner_label
from . import pool_repo
from .flux import FluxControllers
from .gitserver import GitServer


class GitOpsLabCluster(RealLabCluster):
    git: GitServer | None = None
    flux: FluxControllers | None = None

    def pool_objects(self) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """(Group, {slot name: slot}) as the lab puts them in Git."""
        group = topology.group(self.config.group, self.config.slots, self.config.capacity)
        # lifecycle Jobs run on the runner node (RealLabCluster patches this in; here it is Git's)
        group["spec"]["jobs"] = {"nodeSelector": {_runner_label(): "true"}}
        slots = {}
        for name in self.slot_names:
            endpoints = self.fleet.endpoints[name]
            secret = topology.secret_name(name, endpoints.method)
            slots[name] = topology.slot(name, self.config.group, endpoints.power_spec(secret, self.config.namespace),
                                        endpoints.boot_check)
        return group, slots

    async def _create_pool(self) -> None:
        ns = self.config.namespace
        for name in self.slot_names:
            endpoints = self.fleet.endpoints[name]
            body = topology.secret(topology.secret_name(name, endpoints.method), ns, {})
            del body["stringData"]
            body["data"] = {k: base64.b64encode(v.encode()).decode() for k, v in endpoints.secret_data().items()}
            await self.api.create(body)
        self.git = GitServer(self.workdir / "git")
        await self._stack.enter_async_context(self.git)
        group, slots = self.pool_objects()
        revision = self.git.commit(pool_repo.files(group, slots), "The lab's pool")
        cp = self.control_plane
        assert cp is not None and cp.pki is not None
        self.flux = FluxControllers(self.api, cp.pki, self.workdir / "flux")
        await self._stack.enter_async_context(self.flux)
        await self.flux.own_pool(self.git.url)
        await self.flux.applied(revision)
        self._faults = FaultSync(self.fleet.machines, self._say)

    def edit_slot(self, name: str, change: Any, message: str) -> str:
        """Commit `change(slot)` (a function editing a copy of the slot's object in Git) and push: the revision."""
        assert self.git is not None
        path = self.git.clone / pool_repo.slot_file(name)
        slot = copy.deepcopy(yaml.safe_load(path.read_text()))
        change(slot)
        return self.git.commit({pool_repo.slot_file(name): pool_repo.dump(slot)}, message)

    def describe_parts(self) -> list[str]:
        parts = super().describe_parts()
        if self.git is not None and self.flux is not None:
            parts.append(f"gitops       Flux (source-controller + kustomize-controller, logs in "
                         f"{self.flux.workdir / 'logs'}) applies {self.git.url} every 10 s, prune on")
            parts.append(f"             change the pool: edit {self.git.clone / pool_repo.FOLDER}, then "
                         f"`git -C {self.git.clone} commit -am 'my change' && git -C {self.git.clone} push`")
        return parts
