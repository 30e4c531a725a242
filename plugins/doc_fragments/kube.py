# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    """How the node modules find the Kubernetes API server."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file.
      - When omitted, the module uses the pod's in-cluster credentials if it runs in a pod, otherwise
        E(KUBECONFIG) or C(~/.kube/config).
    type: path
  context:
    description: The kubeconfig context to use; the file's current context when omitted.
    type: str
requirements:
  - kubernetes (the official Python client)
"""
