"""Talking to the API server: our aiohttp client (client.py), the credentials it uses (connection.py,
kubeconfig.py), the watched cache and its kind names (cache.py, store.py). Below the lifecycle and the
provider, above jobs/api/model (.importlinter). See docs/controller.md.
"""
