"""Lifecycle Jobs: pure builders of their manifests and pure readers of their outcome (no I/O).

See docs/job-contract.md for what the container runs and what the playbooks receive.
"""
from homecluster.jobs.errors import JobSpecError
from homecluster.jobs.extravars import CREDENTIALS_DIR, extra_vars
from homecluster.jobs.manifest import (
    CONTAINER_NAME,
    DEFAULT_SERVICE_ACCOUNT,
    JOB_VARS_ANNOTATION,
    JOB_VARS_FILE,
    PLAYBOOKS,
    SHUTDOWN,
    STARTUP,
    job_command,
    shutdown_job,
    startup_job,
)
from homecluster.jobs.naming import label_value, names_slot, shutdown_job_name, startup_job_name
from homecluster.jobs.outcome import JobTimes, Outcome, job_message, job_outcome, job_times, owned_by

__all__ = [
    "CONTAINER_NAME", "CREDENTIALS_DIR", "DEFAULT_SERVICE_ACCOUNT", "JOB_VARS_ANNOTATION", "JOB_VARS_FILE",
    "JobSpecError", "JobTimes", "Outcome", "PLAYBOOKS", "SHUTDOWN", "STARTUP", "extra_vars", "job_command",
    "job_message", "job_outcome", "job_times", "label_value", "names_slot", "owned_by", "shutdown_job", "shutdown_job_name",
    "startup_job", "startup_job_name",
]
