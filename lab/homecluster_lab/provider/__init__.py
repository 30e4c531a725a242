"""The lab's side of the autoscaler provider: a cache fed by its own watches and a claim writer, both over
kubernetes_asyncio, for when no operator runs (the lab's provider, the provider's tests)."""
