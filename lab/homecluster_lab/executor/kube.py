"""Moved to homecluster_lab.node.kube (the client every lab kubelet speaks); kept for imports made before."""
from homecluster_lab.node.kube import MERGE_PATCH, Kube, KubeError, core_path, job_path, pod_path

__all__ = ["MERGE_PATCH", "Kube", "KubeError", "core_path", "job_path", "pod_path"]
