"""The lab's Job executor: runs lifecycle Jobs' commands locally, as a kubelet and the Job controller would.

See service.py for what it reproduces and layout.py for its one liberty (mounted paths rewritten).
"""
from homecluster_lab.executor.config import ExecutorConfig, PodRun
from homecluster_lab.executor.service import JobExecutor

__all__ = ["ExecutorConfig", "JobExecutor", "PodRun"]
