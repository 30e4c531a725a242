"""Talking to the API server: the aiohttp client, its connection (kubeconfig or in-cluster), the watched
cache and the kind names. Below the lifecycle and the provider, above jobs/api/model. See docs/controller.md.
"""
