"""homecluster: the NodeClaim model (infra.homecluster.dev/v2alpha1) for home-lab machines."""

API_GROUP = "infra.homecluster.dev"
API_VERSION = "v2alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"

__version__ = "0.1.0"
