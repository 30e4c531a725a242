"""The operator's own certificates when cert-manager is absent (`homecluster run --self-signed-certs`).

plan.py decides (pure: the Secrets' contents and a clock in, what to make out), inspect.py validates
what a Secret holds, issue.py makes keys and certificates; operator/certificates.py does the I/O.
"""
