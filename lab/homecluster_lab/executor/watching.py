"""Moved to homecluster_lab.node.watching; kept for imports made before."""
from homecluster_lab.node.watching import list_and_watch

__all__ = ["list_and_watch"]
