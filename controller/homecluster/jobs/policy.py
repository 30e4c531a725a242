"""Which images and ServiceAccounts a lifecycle Job may run with: the operator's allow-lists, as pure checks.

A Group's `spec.jobs.image` and `spec.jobs.serviceAccountName` choose what runs in the Jobs' namespace and with
which token. Whoever may write a Group must not be able to pick any image, nor borrow the operator's or the
autoscaler's token, so both come from lists the operator is configured with (`--job-images`,
`--job-service-accounts`). The webhook refuses a Group that leaves them, and the Job builder refuses it again
(a Group admitted while the webhook was down, or before the lists changed).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Never a Job's identity, whatever the lists say: the operator's own (it creates Jobs) and the autoscaler's.
REFUSED_SERVICE_ACCOUNTS = frozenset({"homecluster-controller", "cluster-autoscaler"})
IMAGE_FIELD = "spec.jobs.image"
SERVICE_ACCOUNT_FIELD = "spec.jobs.serviceAccountName"


@dataclass(frozen=True)
class JobPolicy:
    images: frozenset[str]
    service_accounts: frozenset[str]

    @classmethod
    def of(cls, image: str, service_account: str, images: Iterable[str] = (),
           service_accounts: Iterable[str] = ()) -> "JobPolicy":
        """The operator's default image and ServiceAccount, plus the extra ones it is configured with."""
        return cls(frozenset({image, *images}) - {""},
                   frozenset({service_account, *service_accounts}) - {""} - REFUSED_SERVICE_ACCOUNTS)


def split_list(text: str | None) -> tuple[str, ...]:
    """A flag's comma-separated list ("a, b,,c" -> ("a", "b", "c"))."""
    return tuple(p.strip() for p in (text or "").split(",") if p.strip())


def job_refusals(jobs: Mapping[str, Any] | None, policy: JobPolicy) -> list[tuple[str, str]]:
    """(field, what is wrong and the fix) for each choice of a Group's spec.jobs the policy does not allow."""
    jobs = jobs or {}
    out: list[tuple[str, str]] = []
    image = jobs.get("image")
    if image and image not in policy.images:
        out.append((IMAGE_FIELD, f'image "{image}" is not one the operator runs lifecycle Jobs with '
                                 f'({", ".join(sorted(policy.images))}); leave the field out, or add the image to the '
                                 f"operator's --job-images (env HOMECLUSTER_JOB_IMAGES)"))
    account = jobs.get("serviceAccountName")
    if account and account in REFUSED_SERVICE_ACCOUNTS:
        out.append((SERVICE_ACCOUNT_FIELD, f'ServiceAccount "{account}" is the operator\'s or the autoscaler\'s and '
                                           f"never runs a lifecycle Job; leave the field out (homecluster-job) or name "
                                           f"an account with only cordon and drain rights"))
    elif account and account not in policy.service_accounts:
        out.append((SERVICE_ACCOUNT_FIELD, f'ServiceAccount "{account}" is not one the operator runs lifecycle Jobs '
                                           f'as ({", ".join(sorted(policy.service_accounts))}); leave the field out, or '
                                           f"add it to the operator's --job-service-accounts "
                                           f"(env HOMECLUSTER_JOB_SERVICE_ACCOUNTS)"))
    return out
