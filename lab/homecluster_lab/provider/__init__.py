"""The lab's side of the autoscaler provider, for when no operator runs (the lab's provider, the provider's tests):
a cache fed by list+watch and the operator's own claim writer, both over the product's KubeClient."""
