"""Names shared by every part of homecluster: label and annotation keys, the finalizer, kinds.

One place, so that the controller, the provider, the Jobs, the playbooks and the lab agree.
"""
from homecluster import API_GROUP, API_VERSION, GROUP_VERSION

# Custom resources (all cluster-scoped)
SLOT_KIND, SLOT_PLURAL = "Node", "nodes"
CLAIM_KIND, CLAIM_PLURAL = "NodeClaim", "nodeclaims"
GROUP_KIND, GROUP_PLURAL = "Group", "groups"

# Labels on NodeClaims, lifecycle Jobs and their Pods, and on corev1 Nodes we manage
LABEL_SLOT = f"{API_GROUP}/slot"
LABEL_GROUP = f"{API_GROUP}/group"
LABEL_CLAIM = f"{API_GROUP}/claim"
LABEL_JOB_KIND = f"{API_GROUP}/job-kind"  # "startup" | "shutdown"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "homecluster"
# The full slot name on a lifecycle Job and its Pods: a label value is cut to 63 characters (jobs.naming), so
# whoever selects by LABEL_SLOT confirms the slot with this annotation (jobs.naming.names_slot)
ANNOTATION_SLOT_NAME = f"{API_GROUP}/slot-name"

# The claim controller's finalizer (kopf's persistence finalizer is set to this name too)
FINALIZER = f"{API_GROUP}/claim-reversal"
# The slot's finalizer (metadata only, never spec): a removed slot waits until its machine is let go
# (model.slotremoval)
SLOT_FINALIZER = f"{API_GROUP}/slot-release"

# Annotation placed on a corev1 Node by our cordon, so the readiness gate uncordons only
# a cordon this system placed, never a person's maintenance cordon.
ANNOTATION_CORDONED_BY = f"{API_GROUP}/cordoned-by"
# on a corev1 Node: the slot whose machine it is, set only by the operator; the Jobs' token may patch only
# Nodes carrying it (config/policy/job_node_policy.yaml)
LABEL_MACHINE_OF = f"{API_GROUP}/machine-of"
CORDONED_BY_VALUE = "homecluster"

# cluster-autoscaler taints that must not survive a power-on
CA_TAINTS = ("ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler")
# cluster-autoscaler's mark of a node it is deleting; with --cordon-node-before-terminating (default true in
# 1.34-1.36) it cordons in the same update and leaves both on a node whose deletion succeeded
CA_TO_BE_DELETED = CA_TAINTS[0]

# providerID scheme used when a joined Node has none
PROVIDER_ID_SCHEME = "homecluster://"

__all__ = [name for name in dir() if name.isupper()] + ["API_GROUP", "API_VERSION", "GROUP_VERSION"]
