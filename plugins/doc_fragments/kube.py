# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    """How the node modules find and authenticate to the Kubernetes API server: kubernetes.core's option names,
    aliases and K8S_AUTH_* environment variables (module_utils/kube_client.py, module_utils/kube_config.py)."""

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file. Also read from E(K8S_AUTH_KUBECONFIG).
      - When omitted and O(host) is not set, the module uses the pod's in-cluster credentials if it runs in a pod,
        otherwise E(KUBECONFIG) or C(~/.kube/config).
      - When omitted and O(host) is set, no file is read; the other connection options describe the server.
    type: path
  context:
    description: The kubeconfig context to use; the file's current context when omitted. Also read from E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - URL of the API server, for example C(https://10.0.0.2:6443). Also read from E(K8S_AUTH_HOST).
      - Overrides the server the kubeconfig names.
    type: str
  api_key:
    description:
      - A bearer token (for example a ServiceAccount token) sent to the API server. Also read from E(K8S_AUTH_API_KEY).
      - Overrides the kubeconfig's credentials. Never logged.
    type: str
  ca_cert:
    description:
      - Path of the CA certificate (the whole chain) that signed the API server's certificate.
        Also read from E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Path of a client certificate for the API server. Also read from E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description: Path of the key of O(client_cert). Also read from E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  validate_certs:
    description:
      - Verify the API server's certificate. Also read from E(K8S_AUTH_VERIFY_SSL).
      - When omitted, what the kubeconfig says (verified unless it sets C(insecure-skip-tls-verify)).
    type: bool
    aliases: [verify_ssl]
notes:
  - The connection options have the names, aliases and environment variables of the C(kubernetes.core) modules, and
    the action group C(homecluster.infra.k8s) lets C(module_defaults) set them once for M(homecluster.infra.node_cordon)
    and M(homecluster.infra.node_drain).
  - No Kubernetes library is needed; a kubeconfig is read with PyYAML, which ansible-core itself requires.
  - From a kubeconfig the modules take the server, its CA (C(certificate-authority) or C(-data)),
    C(insecure-skip-tls-verify), a token or C(tokenFile), a client certificate and key (files or C(-data)), and an
    C(exec) credential plugin (C(client.authentication.k8s.io/v1) or C(v1beta1)), and merge the files of a
    E(KUBECONFIG) list as kubectl does. They refuse, naming the field, what they do not speak - C(auth-provider),
    C(username), impersonation, C(tls-server-name) and C(proxy-url) - and never use an HTTP proxy or C(~/.netrc).
  - No credential (a token, a client certificate, an exec plugin's answer) is sent to a plain C(http://) server on
    another machine; use the API server's C(https://) address.
"""
