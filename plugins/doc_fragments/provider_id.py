# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    """Which Nodes the node modules refuse to touch (module_utils/kube_client.py boundary_refusal)."""

    DOCUMENTATION = r"""
options:
  provider_id:
    description:
      - Act only on a Node whose C(spec.providerID) is this; any other Node (or one without a providerID) is
        refused and left untouched. A lifecycle Job passes its slot's providerID here.
      - Whatever this says, a Node labelled C(node-role.kubernetes.io/control-plane) or
        C(node-role.kubernetes.io/master) is always refused and left untouched.
    type: str
"""
